"""Secret masking: the one rule for credentials in note text, applied where text leaves the database.

`mask_secrets` replaces the secret part of credentials with `[REDACTED:<kind>]`, keeping the key
name so the text stays readable. It is idempotent: masked text passes through unchanged. The
retrieval passes and the chunk fetch apply it to every chunk's text as it comes out of SQL; the LLM
client and the tracer apply it again to what they send out (questions, error texts).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

MASK_CACHE_SIZE = 4096  # texts whose masked form is remembered (chunk texts repeat across packs and requests)

# --- secrets ----------------------------------------------------------------------------------

_REDACTED = "[REDACTED:{}]"
# A quoted value runs to its closing quote; a bare one to the end of its words on that line
# (a YAML value may hold spaces, so stopping at the first space would leak the rest).
_QUOTED_OR_BARE = (r"(?P<q>[\"'])?(?P<value>(?(q)(?:(?!(?P=q))[^\n])+|"
                   r"[^\s\"'`,;&}\]]+(?:[ \t]+[^\s\"'`,;&}\]#]+)*))")
_SEPARATOR = r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)"


def _token(kind: str, pattern: str, flags: int = 0) -> tuple[re.Pattern[str], Callable[[re.Match[str]], str]]:
    return re.compile(pattern, flags), lambda m: _REDACTED.format(kind)


def _assignment(kind: str, key: str) -> tuple[re.Pattern[str], Callable[[re.Match[str]], str]]:
    def replace(m: re.Match[str]) -> str:
        if m["value"].startswith("[REDACTED:"):
            return m[0]
        return f"{m['key']}{m['sep']}{m['q'] or ''}{_REDACTED.format(kind)}"

    return re.compile(f"(?P<key>{key})" + _SEPARATOR + _QUOTED_OR_BARE, re.IGNORECASE), replace


def _pem(m: re.Match[str]) -> str:
    return f"{m['begin']}\n{_REDACTED.format('private_key')}\n{m['end'] or ''}".rstrip("\n")


_PEM_LABEL = r"(?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?"
_B64_LINES = r"(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+"

# Order matters: whole blocks first, then specific token shapes (they name a precise kind),
# then key=value forms, whose callbacks leave already-redacted values alone.
_SECRET_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(rf"(?P<begin>-----BEGIN {_PEM_LABEL}-----)[\s\S]*?(?:(?P<end>-----END {_PEM_LABEL}-----)|\Z)"), _pem),
    # A chunk can start inside a key block whose BEGIN line went to the previous chunk.
    (re.compile(rf"\A(?P<begin>){_B64_LINES}(?P<end>-----END {_PEM_LABEL}-----)"),
     lambda m: f"{_REDACTED.format('private_key')}\n{m['end']}"),
    _token("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    _token("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    _token("api_key", r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-|live-|test-|svcacct-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    _token("api_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    _token("api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    _token("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    _token("slack_token", r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    _token("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _assignment("aws_secret_access_key", r"\baws_secret_access_key"),
    _assignment("password", r"\b[\w.-]*?(?:password|passwd|passphrase|pwd)"),
    _assignment("api_key", r"\b[\w.-]*?api[_-]?key"),
    _assignment("secret", r"\b[\w.-]*?(?:client[_-]?secret|secret[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token)"),
    (re.compile(r"(?P<head>\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:Bearer|Basic|Token)[ \t]+)(?!\[REDACTED:)"
                r"[^\s\"']+", re.IGNORECASE),
     lambda m: f"{m['head']}{_REDACTED.format('bearer_token')}"),
    (re.compile(r"(?P<head>\bBearer[ \t]+)(?!\[REDACTED:)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*"),
     lambda m: f"{m['head']}{_REDACTED.format('bearer_token')}"),
    # Credentials inside URLs: postgres://user:secret@host
    (re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)(?!\[REDACTED:)[^\s@/]+(?=@)", re.IGNORECASE),
     lambda m: f"{m['head']}{_REDACTED.format('password')}"),
)


# For each rule in _SECRET_RULES (same order): lower-case literals one of which every match must
# contain. Most text holds none of them, and a substring test is far cheaper than the regex scan
# (masking runs on every snippet shown and every prompt sent, so it sits on the query path).
_SECRET_RULE_LITERALS: tuple[tuple[str, ...], ...] = (
    ("-----begin",), ("-----end",), ("eyj",), ("eyj",), ("sk-",), ("k_live_", "k_test_"), ("aiza",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), ("xox",), ("akia", "asia"), ("aws_secret_access_key",),
    ("password", "passwd", "passphrase", "pwd"), ("apikey", "api_key", "api-key"), ("secret", "token"),
    ("authorization",),
    ("bearer",), ("://",),
)
assert len(_SECRET_RULE_LITERALS) == len(_SECRET_RULES)


_ALL_SECRET_LITERALS = tuple(sorted({x for xs in _SECRET_RULE_LITERALS for x in xs}))


@functools.lru_cache(maxsize=MASK_CACHE_SIZE)  # one chunk's text is masked for several packs
def mask_secrets(text: str) -> str:
    lowered = text.lower()
    found = {literal for literal in _ALL_SECRET_LITERALS if literal in lowered}
    if not found:
        return text
    for (pattern, replace), literals in zip(_SECRET_RULES, _SECRET_RULE_LITERALS, strict=True):
        if not found.isdisjoint(literals):
            text = pattern.sub(replace, text)
    return text


def contains_secret(text: str) -> bool:
    return mask_secrets(text) != text
