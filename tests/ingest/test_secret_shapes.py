"""Secrets are found by their shape wherever they stand (issue 47): glued to a word by `_`, to letters,
digits or punctuation, inside a URL's user info; more providers (GitLab, npm, Hugging Face, SendGrid);
more key names (`API key`, `secret_value`, `pw`, `pass`); the text around a masked value stays as written;
a masked URL in a link never makes a note unreadable; and masking stays linear in time."""

from __future__ import annotations

import string
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.arguments import query_text
from rag.ingest.links import links_of
from rag.obsidian import render_note
from rag.secrets import mask_path, mask_secrets, mask_text

GHP = "ghp_" + "Zq7xW2" * 6
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
GLPAT = "glpat-" + "xY3zA9bC8dE7fG6hJ5kL"
NPM = "npm_" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2y"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
SENDGRID = "SG." + "aB1cD2eF3gH4iJ5kL6mN7o" + "." + "pQ8rS9tU0vW1xY2zA3bC4dE5fG6hI7jK8lM9nO0pQ1r"
OPENAI = "sk-proj-" + "Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3Wx4"


@pytest.mark.security
@pytest.mark.parametrize(("text", "expected"), [
    (f"deploy_{GHP}", "deploy_[REDACTED:github_token]"),
    (f"GH_{GHP} is the deploy key", "GH_[REDACTED:github_token] is the deploy key"),
    (f"key_{AWS_ID}", "key_[REDACTED:aws_access_key_id]"),
    (f"key_{AWS_ID}_prod", "key_[REDACTED:aws_access_key_id]_prod"),
    (f"x{AWS_ID}", "x[REDACTED:aws_access_key_id]"),
    (f"JWT_{JWT}", "JWT_[REDACTED:jwt]"),
    (f"v2{JWT}", "v2[REDACTED:jwt]"),
    (f"token#{GHP}!", "token#[REDACTED:github_token]!"),
    (f"deploy-{OPENAI}", "deploy-[REDACTED:api_key]"),
    (f"my_{OPENAI}", "my_[REDACTED:api_key]"),
    (f"prod_sk_live_{'a1B2' * 5}", "prod_[REDACTED:api_key]"),
    (f"key_AIza{'SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q'}", "key_[REDACTED:api_key]"),
    ("bot_xoxb-1234-5678-abcdefghijklmnop", "bot_[REDACTED:slack_token]"),
    ("see:https://hooks.slack.com/services/T000/B000/XXXXXXXX", "see:[REDACTED:slack_webhook]"),
    (f"https://x-access-token:{GHP}@github.com/o/r", "https://x-access-token:[REDACTED:github_token]@github.com/o/r"),
    (f"https://{GHP}@github.com/o/r", "https://[REDACTED:github_token]@github.com/o/r"),
])
def test_a_token_glued_to_other_text_is_masked_and_its_neighbours_stay(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected
    assert mask_text(text) == expected


@pytest.mark.security
@pytest.mark.parametrize(("text", "expected"), [
    (f"gitlab {GLPAT} here", "gitlab [REDACTED:gitlab_token] here"),
    (f"ci_{GLPAT}", "ci_[REDACTED:gitlab_token]"),
    (f"NPM_TOKEN_{NPM}", "NPM_TOKEN_[REDACTED:npm_token]"),
    (f"model {HF}.", "model [REDACTED:huggingface_token]."),
    (f"mail_{SENDGRID} ok", "mail_[REDACTED:sendgrid_key] ok"),
    ("API key: abcd1234efgh5678ijkl", "API key: [REDACTED:api_key]"),
    ("the api key = abcd1234efgh5678ijkl now", "the api key = [REDACTED:api_key] now"),
    ("secret_value=abc", "secret_value=[REDACTED:secret]"),
    ("DB_PASSWORD_VALUE: 'hunter22'", "DB_PASSWORD_VALUE: '[REDACTED:password]'"),
    ("pw=abc123", "pw=[REDACTED:password]"),
    ("db_pw=abc123 then", "db_pw=[REDACTED:password] then"),
    ("pass: abc12345x", "pass: [REDACTED:password]"),
    ("DB_PASS=hunter2", "DB_PASS=[REDACTED:password]"),
])
def test_more_providers_and_key_names(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected
    assert mask_text(text) == expected


@pytest.mark.security
@pytest.mark.parametrize(("text", "expected"), [
    ("password=[hunter2] must be rotated", "password=[REDACTED:password] must be rotated"),
    ("password=hunter2 must be rotated", "password=[REDACTED:password] must be rotated"),
    ("(password=hunter2) must be rotated", "(password=[REDACTED:password]) must be rotated"),
    ("[[password=hunter2]] must be rotated", "[[password=[REDACTED:password]]] must be rotated"),
    ("the password: hunter2 must be rotated", "the password: [REDACTED:password] must be rotated"),
    ("the password=hunter2. Rotate it", "the password=[REDACTED:password]. Rotate it"),
    ("old password=hunter2, new password=hunter3; done", "old password=[REDACTED:password], new password=[REDACTED:password]; done"),
    ("GITHUB_TOKEN=xyz ./deploy.sh", "GITHUB_TOKEN=[REDACTED:token] ./deploy.sh"),
    ("x?api_key=abc123&page=2", "x?api_key=[REDACTED:api_key]&page=2"),
    # a value on a line of its own (YAML, an .ini or .env line) may hold spaces: all of it is the value
    ("password: correct horse battery staple", "password: [REDACTED:password]"),
    ("  db_password = correct horse battery staple  # prod", "  db_password = [REDACTED:password]  # prod"),
    ("- password: two words", "- password: [REDACTED:password]"),
    ('password: "two words" # old', 'password: "[REDACTED:password]" # old'),
])
def test_the_text_around_a_masked_value_stays_as_written(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected
    assert mask_text(text) == expected
    assert mask_text(expected) == expected


@pytest.mark.parametrize("text", [
    "risk-assessment-2024-q3-review-notes",
    "Risk-Assessment-2024-Q3-Review-Notes",
    "the task-force-2024-report-final-version",
    "pass: true", "pass: 3 rounds", "compass: north", "bypass=1", "overpass: closed",
    "API key: you find it under Settings.",
    "Keep your API key: it is yours alone.",
    "The secret value: none of your business.",
    "msg.text was sent",
    "max_tokens: 1024",
    "shelf_life: 3 weeks",
    "A KIAOSK ASIA trip",
])
def test_prose_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text
    assert mask_text(text) == text


# --- a masked URL in a link ------------------------------------------------------------------------

@pytest.mark.security
@pytest.mark.parametrize("text", [
    "see [site](https://user:pw123456@example.com/)",
    f"see [repo](https://x:{GHP}@github.com/o/r) and [[Other note]]",
    "![img](https://user:pw123456@[::1]/a.png)",
])
def test_a_link_to_a_masked_url_is_read_and_shown_by_its_words(text: str) -> None:
    masked = mask_text(text)
    assert "REDACTED" in masked
    rendered = render_note(masked)  # raised ValueError ("does not appear to be an IPv4 or IPv6 address")
    assert "pw123456" not in rendered.text
    links = links_of(masked, 200)
    assert [link.target_text for link in links] == (["Other note"] if "Other note" in text else [])


# --- a property: every token shape, glued to anything, is masked by both maskers ---------------------

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64URL = ALNUM + "_-"


def _core(alphabet: str, size: int) -> st.SearchStrategy[str]:
    # Random, with each of upper case, lower case and digits (as a generated token has).
    return st.text(alphabet, min_size=size, max_size=size).map(lambda s: f"aZ9{s}"[:size])


# (template, cores): each `{}` of the template is filled with its core; no core may survive masking.
SHAPES: dict[str, tuple[str, tuple[st.SearchStrategy[str], ...]]] = {
    "github": ("ghp_{}", (_core(ALNUM, 36),)),
    "github_pat": ("github_pat_{}", (_core(ALNUM + "_", 82),)),
    "gitlab": ("glpat-{}", (_core(B64URL, 20),)),
    "npm": ("npm_{}", (_core(ALNUM, 36),)),
    "huggingface": ("hf_{}", (_core(string.ascii_letters, 34),)),
    "sendgrid": ("SG.{}.{}", (_core(B64URL, 22), _core(B64URL, 43))),
    "aws_key_id": ("AKIA{}", (st.text(UPPER, min_size=16, max_size=16),)),
    "google": ("AIza{}", (_core(B64URL, 35),)),
    "openai": ("sk-proj-{}", (_core(ALNUM, 48),)),
    "openai_legacy": ("sk-{}", (_core(ALNUM, 48),)),
    "anthropic": ("sk-ant-api03-{}", (_core(ALNUM, 93),)),
    "stripe": ("sk_live_{}", (_core(ALNUM, 24),)),
    "slack": ("xoxb-1234-{}", (_core(ALNUM, 24),)),
    "slack_webhook": ("https://hooks.slack.com/services/T0/B0/{}", (_core(ALNUM, 24),)),
    "jwt": ("eyJ{}.eyJ{}.{}", (_core(B64URL, 20), _core(B64URL, 30), _core(B64URL, 43))),
    "url_password": ("https://user:{}@example.com", (_core(ALNUM, 12),)),
}
GLUE = string.ascii_letters + string.digits + "_-.:/@#$%&*()[]{}<>=+!?,;'\" \t"


@st.composite
def glued(draw: st.DrawFn) -> tuple[str, list[str]]:
    template, cores = draw(st.sampled_from(sorted(SHAPES.values())))
    parts = [draw(c) for c in cores]
    prefix, suffix = draw(st.text(GLUE, max_size=8)), draw(st.text(GLUE, max_size=8))
    return prefix + template.format(*parts) + suffix, parts


@pytest.mark.security
@settings(max_examples=600, deadline=None)
@given(glued())
def test_every_token_shape_glued_to_anything_is_masked(case: tuple[str, list[str]]) -> None:
    text, cores = case
    maskers = [mask_text, mask_secrets, lambda t: query_text(t, 10_000)] + ([mask_path] if "/" not in text else [])
    for masked in (mask(text) for mask in maskers):
        assert not [c for c in cores if c in masked], (text, masked)
    assert mask_text(mask_text(text)) == mask_text(text)


# --- linear time for the new shapes --------------------------------------------------------------

_HOSTILE_SHAPES = ("a", "a_", "aZ9", "eyJa", "eyJa.", "ghp_a", "glpat-a", "sk-a", "sk-aZ9", "SG.a", "SG.a.",
                   "hf_a", "npm_a", "AKIA", "AIza", "pass:", "pw=", "api key: ", "secret_value=", "p= ", "a: ",
                   "password=[", "password=(a", " a", "\na: b c")
# Every rule's literal at once (each rule runs only on text holding one), and the new key names alone.
_EVERY_LITERAL = ("password passwd passphrase pwd pass pw api key apikey api_key secret access token authorization "
                  "bearer :// eyJ ghp_ github_pat_ glpat- npm_ hf_ api_org_ SG. sk- sk_live_ whsec_ AIza AKIA xoxb- "
                  "hooks.slack.com -----BEGIN PRIVATE KEY----- -----END PRIVATE KEY-----")
_KEYWORDS = ("", _EVERY_LITERAL, "pass", "api key", "secret_value")


@pytest.mark.security
def test_masking_the_new_shapes_takes_linear_time() -> None:
    """Every new shape after each keyword, 64 KB each, both maskers, in a child process that must finish
    within 120 s (a few seconds when linear; a quadratic rule takes minutes for one of these)."""
    script = (
        "from rag.secrets import mask_secrets, mask_text\n"
        f"shapes, keywords = {_HOSTILE_SHAPES!r}, {_KEYWORDS!r}\n"
        "for k in keywords:\n"
        "    for unit in shapes:\n"
        "        text = k + ' ' + unit * (65536 // len(unit))\n"
        "        mask_text(text); mask_secrets(text)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
