"""The masking the indexer applies before writing (rag/secrets.py): the detectors issue 29 asked for,
line counts kept for citations, file names that stay distinct, front matter masked by key."""

from __future__ import annotations

import string
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.secrets import mask_path, mask_secrets, mask_structure, mask_text

PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACDW3EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEAAAA\n-----END OPENSSH PRIVATE KEY-----")


@pytest.mark.security
@pytest.mark.parametrize(("text", "expected"), [
    ("secret=s3cr3t", "secret=[REDACTED:secret]"),
    ("MY_SECRET = 'abc'", "MY_SECRET = '[REDACTED:secret]'"),
    ("token=abc", "token=[REDACTED:token]"),
    ("GITHUB_TOKEN=xyz ./deploy.sh", "GITHUB_TOKEN=[REDACTED:token] ./deploy.sh"),  # one word: the command stays
    ("token: 9f8e7d6c5b4a then more words", "token: [REDACTED:token] then more words"),
    ('{"session_token": "abcdef12"}', '{"session_token": "[REDACTED:token]"}'),
    ("secret: Kq2mZ8vXr4tLp9wN", "secret: [REDACTED:secret]"),
    ("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key: [REDACTED:aws_secret_access_key]"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]"),
    ("SecretAccessKey: wJalrXUtnFEMI/K7MDENG", "SecretAccessKey: [REDACTED:aws_secret_access_key]"),
    ("app xapp-1-A0123456789-abcdef", "app [REDACTED:slack_token]"),
    ("hook https://hooks.slack.com/services/T000/B000/XXXXXXXX ok", "hook [REDACTED:slack_webhook] ok"),
])
def test_generic_and_missing_detectors(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected
    assert mask_text(text) == expected


@pytest.mark.parametrize("text", [
    "Token: the smallest unit of text a model reads.",
    "Secret: Santa exchange on Friday.",
    "max_tokens: 1024",
    "The secret to good soup is time.",
    "tokens: 5 per request",
    "token = get_token(session)",
    "TOKEN=$GITHUB_TOKEN ./deploy.sh",
    "if secret == None:",
    "secret: <your secret here>",
    "token = null",
])
def test_prose_and_code_about_secrets_and_tokens_are_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


lines = st.lists(st.sampled_from([
    "plain words", "", "password: hunter2 x", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7", "token=abc", "ghp_" + "a1" * 18, "  indented"]),
    max_size=30).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_mask_text_keeps_every_line_break_and_is_idempotent(text: str) -> None:
    masked = mask_text(text)
    assert masked.count("\n") == text.count("\n")
    assert mask_text(masked) == masked
    assert "a1a1a1a1" not in masked and "hunter2" not in masked


def test_key_block_keeps_its_line_count_so_later_lines_keep_their_numbers() -> None:
    text = f"intro\n{PEM}\nafter"
    masked = mask_text(text)
    assert masked.splitlines()[5] == "after" and "b3Blbn" not in masked
    assert masked.splitlines()[1] == "-----BEGIN OPENSSH PRIVATE KEY-----"


names = st.text(string.ascii_letters + string.digits + " ._-", min_size=1, max_size=12)
tokens = st.text(string.ascii_letters + string.digits, min_size=36, max_size=40).map(lambda s: f"ghp_{s}")


@settings(max_examples=200, deadline=None)
@given(names, tokens, tokens)
def test_masked_paths_are_stable_distinct_idempotent_and_keep_their_folders(name: str, a: str, b: str) -> None:
    pa, pb = f"{name} {a}/n.md", f"{name} {b}/n.md"
    assert mask_path(pa) == mask_path(pa) and a not in mask_path(pa)
    assert mask_path(mask_path(pa)) == mask_path(pa)
    if a != b:
        assert mask_path(pa) != mask_path(pb)
    folder = mask_path(f"{name} {a}")
    assert mask_path(pa) == f"{folder}/n.md"
    assert mask_path(f"{name}/plain.md") == f"{name}/plain.md"


def test_front_matter_values_are_masked_by_their_key() -> None:
    front = {
        "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # the value alone is no known shape
        "password": 123456,
        "db": {"password": "line one\nline two", "host": "db.internal"},
        "token": ["first-one-9", "second-two-9"],
        "ghp_" + "b2" * 18: "a key that is itself a token",
        "notes": ["see password=hunter2"],
        "ssh": PEM,
        "count": 3,
    }
    masked = mask_structure(front)
    assert masked["aws_secret_access_key"] == "[REDACTED:aws_secret_access_key]"
    assert masked["password"] == "[REDACTED:password]"
    assert masked["db"] == {"password": "[REDACTED:password]", "host": "db.internal"}
    assert masked["token"] == ["[REDACTED:token]", "[REDACTED:token]"]
    assert masked["[REDACTED:github_token]"] == "a key that is itself a token"
    assert masked["notes"] == ["see password=[REDACTED:password]"]
    assert "b3Blbn" not in masked["ssh"] and masked["count"] == 3
    assert mask_structure(masked) == masked


# -- linear time: one keyword anywhere enables a rule; a long run of word characters must not make it
# quadratic (a 40 KB note once took minutes to index) --------------------------------------------------

_HOSTILE_SHAPES = ("a-", "a.", "a_", "eyJa-", "xoxa-", "sk-a", "a:", "a= ", "ab://", "Bearer ")
_KEYWORDS = ("token", "secret", "password", "pwd", "api_key", "apikey", "secret_access_key", "client_secret",
             "eyJ", "sk-", "ghp_", "xoxb", "akia", "authorization", "bearer", "://", "-----BEGIN PRIVATE KEY-----")


@pytest.mark.security
def test_masking_a_hostile_note_takes_linear_time() -> None:
    """Every rule on every shape, 64 KB each, both ways of masking, in a child process that must finish
    within 60 s (a few seconds when linear; the quadratic rules took about 4 s for 8 KB of one shape,
    minutes for each of these)."""
    script = (
        "import sys, time\n"
        "from rag.secrets import mask_secrets, mask_text\n"
        f"shapes, keywords = {_HOSTILE_SHAPES!r}, {_KEYWORDS!r}\n"
        "worst = 0.0\n"
        "for k in keywords:\n"
        "    for unit in shapes:\n"
        "        text = k + ' ' + unit * (65536 // len(unit))\n"
        "        t = time.perf_counter(); mask_text(text); mask_secrets(text); worst = max(worst, time.perf_counter() - t)\n"
        "print(round(worst, 3))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
