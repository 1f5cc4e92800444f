"""Secret masking: the one rule for credentials in note text, applied when a note is indexed.

`mask_secrets` replaces the secret part of credentials with `[REDACTED:<kind>]`, keeping the key
name so the text stays readable. It is idempotent: masked text passes through unchanged. Detected:
private-key blocks, GitHub, AWS (access key id, and the secret key by its name), Slack (tokens and
webhooks), OpenAI/Stripe/Google API keys, JWTs, bearer and basic authorization, credentials in URLs,
and `password=`, `secret=`, `token=`, `api_key=` style assignments (`key: value` counts too when the
value looks like a credential rather than prose).

The indexer masks everything it writes, before it is embedded or stored (rag/ingest/pipeline.py,
store.py and beir.py):
`mask_text` the note's whole text (keeping its line count, so citations by line still hold),
`mask_structure` front matter values (a value is replaced whole when its key names a credential),
`mask_path` file and folder names (a hash of the real name keeps two masked names apart, so each
document keeps its identity). The database therefore never holds a detected secret. `mask_secrets`
(cached) runs again on text that was never stored: questions, LLM prompts, error texts, traces.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from typing import Any

MASK_CACHE_SIZE = 4096  # texts whose masked form is remembered (chunk texts repeat across packs and requests)
PATH_HASH_CHARS = 8  # hex digits of sha256(real name) in a masked name: keeps two masked names apart

# --- secrets ----------------------------------------------------------------------------------

_REDACTED = "[REDACTED:{}]"
_MARKER = re.compile(r"\[REDACTED:([a-z_]+)\]")
# A quoted value runs to its closing quote; a bare one to the end of its words on that line
# (a YAML value may hold spaces, so stopping at the first space would leak the rest).
_QUOTED_OR_BARE = (r"(?P<q>[\"'])?(?P<value>(?(q)(?:(?!(?P=q))[^\n])+|"
                   r"[^\s\"'`,;&}\]]+(?:[ \t]+[^\s\"'`,;&}\]#]+)*))")
_SEPARATOR = r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)"
# A value after `token:` or `secret:` (not `=`) is masked only when it looks like a credential:
# one word of at least this many characters, or a shorter one mixing letters and digits. "Token:
# the smallest unit of text" is prose; "token: 9f8e7d6c5b4a" is not.
_CREDENTIAL_MIN_CHARS = 16
_MIXED_CREDENTIAL_MIN_CHARS = 8

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


def _token(kind: str, pattern: str, flags: int = 0) -> Rule:
    return re.compile(pattern, flags), lambda m: _REDACTED.format(kind)


def _key_ending(*endings: str) -> str:
    """A key (a run of word characters, dots and dashes, as `aws.secret_access_key`) that ends with one of
    `endings` (each of fixed width). Matched in linear time: the run is read once from its start and
    never backtracked into, and the ending is checked behind it (a lazy `[\\w.-]*?keyword` restarted
    at every word boundary of a long run: a 40 KB note took minutes)."""
    behind = "|".join(f"(?<={e})" for e in endings)
    return rf"(?<![\w.-])[\w.-]*+(?:{behind})"


def _assignment(kind: str, key: str) -> Rule:
    def replace(m: re.Match[str]) -> str:
        if m["value"].startswith("[REDACTED:"):
            return m[0]
        return f"{m['key']}{m['sep']}{m['q'] or ''}{_REDACTED.format(kind)}"

    return re.compile(f"(?P<key>{key})" + _SEPARATOR + _QUOTED_OR_BARE, re.IGNORECASE), replace


def _credential_like(word: str) -> bool:
    if not word or any(c.isspace() for c in word):
        return False
    mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    return len(word) >= _CREDENTIAL_MIN_CHARS or (mixed and len(word) >= _MIXED_CREDENTIAL_MIN_CHARS)


# A value that names or computes a secret rather than being one: `token = get_token()`,
# `TOKEN=$GITHUB_TOKEN`, `secret == None`, `token: <your token>`. Left as written (code stays readable).
_REFERENCE = re.compile(r"^=|[(\[{$<]")
_NON_VALUES = frozenset({"none", "null", "nil", "true", "false", "undefined"})


def _generic_assignment(kind: str, key: str) -> Rule:
    """`secret=...` and `token=...` always; `secret: ...` only when the value looks like a credential."""
    def replace(m: re.Match[str]) -> str:
        value = m["value"]
        if value.startswith("[REDACTED:") or _REFERENCE.search(value) or value.lower() in _NON_VALUES:
            return m[0]
        head, marker = f"{m['key']}{m['sep']}{m['q'] or ''}", _REDACTED.format(kind)
        if "=" in m["sep"]:
            return head + marker
        if m["q"]:
            return head + marker if _credential_like(value) else m[0]
        first, *rest = re.split(r"(?=[ \t])", value, maxsplit=1)  # the rest of a line of prose stays
        return head + marker + "".join(rest) if _credential_like(first) else m[0]

    return re.compile(f"(?P<key>{key})" + _SEPARATOR + _QUOTED_OR_BARE, re.IGNORECASE), replace


def _pem(keep_lines: bool) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        redacted, newlines = _REDACTED.format("private_key"), m[0].count("\n")
        if not keep_lines:
            return f"{m['begin']}\n{redacted}\n{m['end'] or ''}".rstrip("\n")
        if newlines == 0:
            return f"{m['begin']} {redacted}"
        return f"{m['begin']}\n{redacted}" + "\n" * (newlines - 1) + (m["end"] or "")

    return replace


def _pem_tail(keep_lines: bool) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        gap = "\n" * (m[0].count("\n") if keep_lines else 1)
        return f"{_REDACTED.format('private_key')}{gap}{m['end']}"

    return replace


_PEM_LABEL = r"(?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?"
_B64_LINES = r"(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+"
_PEM_BLOCK = re.compile(rf"(?P<begin>-----BEGIN {_PEM_LABEL}-----)[\s\S]*?(?:(?P<end>-----END {_PEM_LABEL}-----)|\Z)")
# A chunk can start inside a key block whose BEGIN line went to the previous chunk.
_PEM_TAIL = re.compile(rf"\A(?P<begin>){_B64_LINES}(?P<end>-----END {_PEM_LABEL}-----)")


# A URL up to its password: scheme (starting a run, read without backtracking), `://`, a user name (which
# may be empty: `postgresql://:pw@host` holds a password) and `:`.
_URL_USERINFO = r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s:/@]*+:"


def _optional_dashes(*words: str) -> list[str]:
    """Each way of joining `words` with nothing, `_` or `-` between them (fixed-width endings)."""
    out = [words[0]]
    for word in words[1:]:
        out = [f"{head}{joint}{word}" for head in out for joint in ("", "[_-]")]
    return out


def _rules(keep_lines: bool) -> tuple[Rule, ...]:
    """Order matters: whole blocks first, then specific token shapes (they name a precise kind),
    then key=value forms, whose callbacks leave already-redacted values alone. Only the key
    blocks span lines; with `keep_lines` their replacement keeps every line break."""
    return (
        (_PEM_BLOCK, _pem(keep_lines)),
        (_PEM_TAIL, _pem_tail(keep_lines)),
        # (a header of at most 1 KB, read without backtracking: a run of "eyJa-" is linear)
        _token("jwt", r"\beyJ[A-Za-z0-9_-]{5,1024}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+"),
        _token("jwt", r"\beyJ[A-Za-z0-9_-]{5,1024}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+"),
        _token("api_key", r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-|live-|test-|svcacct-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
        _token("api_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        _token("api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
        _token("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        _token("slack_token", r"\b(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,}"),
        _token("slack_webhook", r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
        _token("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        _assignment("aws_secret_access_key", _key_ending(*_optional_dashes("secret", "access", "key"))),
        _assignment("password", _key_ending("password", "passwd", "passphrase", "pwd")),
        _assignment("api_key", _key_ending(*_optional_dashes("api", "key"))),
        _assignment("secret", _key_ending(*(e for pair in (("client", "secret"), ("secret", "key"), ("access", "token"),
                                                           ("auth", "token"), ("refresh", "token"))
                                            for e in _optional_dashes(*pair)))),
        _generic_assignment("secret", _key_ending("secret")),
        _generic_assignment("token", _key_ending("token")),
        (re.compile(r"(?P<head>\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:Bearer|Basic|Token)[ \t]+)(?!\[REDACTED:)"
                    r"[^\s\"']+", re.IGNORECASE),
         lambda m: f"{m['head']}{_REDACTED.format('bearer_token')}"),
        (re.compile(r"(?P<head>\bBearer[ \t]+)(?!\[REDACTED:)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*"),
         lambda m: f"{m['head']}{_REDACTED.format('bearer_token')}"),
        # Credentials inside URLs: postgres://user:secret@host
        (re.compile(rf"(?P<head>{_URL_USERINFO})(?!\[REDACTED:)[^\s@/]++(?=@)", re.IGNORECASE),
         lambda m: f"{m['head']}{_REDACTED.format('password')}"),
    )


_SECRET_RULES = _rules(keep_lines=False)
_SECRET_RULES_KEEPING_LINES = _rules(keep_lines=True)

# For each rule (same order): lower-case literals one of which every match must contain. Most text
# holds none of them, and a substring test is far cheaper than the regex scan (masking runs on every
# note indexed and every prompt sent).
_SECRET_RULE_LITERALS: tuple[tuple[str, ...], ...] = (
    ("-----begin",), ("-----end",), ("eyj",), ("eyj",), ("sk-",), ("k_live_", "k_test_"), ("aiza",),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), ("xox", "xapp-"), ("hooks.slack.com",),
    ("akia", "asia"), ("secret",),
    ("password", "passwd", "passphrase", "pwd"), ("apikey", "api_key", "api-key"), ("secret", "token"),
    ("secret",), ("token",), ("authorization",), ("bearer",), ("://",),
)
assert len(_SECRET_RULE_LITERALS) == len(_SECRET_RULES)


_ALL_SECRET_LITERALS = tuple(sorted({x for xs in _SECRET_RULE_LITERALS for x in xs}))


def _mask(text: str, rules: tuple[Rule, ...]) -> str:
    lowered = text.lower()
    found = {literal for literal in _ALL_SECRET_LITERALS if literal in lowered}
    if not found:
        return text
    for (pattern, replace), literals in zip(rules, _SECRET_RULE_LITERALS, strict=True):
        if not found.isdisjoint(literals):
            text = pattern.sub(replace, text)
    return text


@functools.lru_cache(maxsize=MASK_CACHE_SIZE)  # one chunk's text is masked for several packs
def mask_secrets(text: str) -> str:
    """Masked text, a key block shortened to three lines (for what is shown or sent, never stored)."""
    return _mask(text, _SECRET_RULES)


def contains_secret(text: str) -> bool:
    return mask_secrets(text) != text


def mask_text(text: str) -> str:
    """Masked text with exactly the line breaks of `text` (a note's body before it is chunked).

    Not cached: a whole note may be large, and each is masked once per index run."""
    return _mask(text, _SECRET_RULES_KEEPING_LINES)


# --- names and front matter ---------------------------------------------------------------------

_KEY_PROBE = "x1x1x1x1x1x1"  # a value every assignment rule masks, to learn whether a key names a secret


@functools.lru_cache(maxsize=MASK_CACHE_SIZE)  # front matter keys repeat across a vault's notes
def secret_key_marker(key: str) -> str | None:
    """`[REDACTED:<kind>]` when `key` names a credential (`password`, `aws_secret_access_key`,
    `github_token`, ...), else None: its value is then masked whole, whatever it looks like."""
    prefix = f"{key}: "
    masked = mask_secrets(prefix + _KEY_PROBE)
    rest = masked[len(prefix):] if masked.startswith(prefix) else ""
    return rest if _MARKER.fullmatch(rest) else None


def mask_structure(value: Any, key: str | None = None) -> Any:
    """A JSON-like value (front matter, metadata) with every string masked, keys included; under a
    key that names a credential, every non-empty string or number is replaced by its marker."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = mask_text(str(k))
            while name in out:  # two keys masked alike both stay
                name += "'"
            out[name] = mask_structure(v, str(k))
        return out
    if isinstance(value, list):
        return [mask_structure(v, key) for v in value]
    marker = secret_key_marker(key) if key is not None else None
    if marker is not None and (isinstance(value, int | float) and not isinstance(value, bool)
                               or isinstance(value, str) and value.strip() and not value.startswith("[REDACTED:")):
        return marker
    return mask_text(value) if isinstance(value, str) else value


def mask_path(path: str) -> str:
    """A vault-relative path with secrets masked segment by segment. A masked segment carries a short
    hash of the real one (`[REDACTED:github_token~1a2b3c4d].md`): the same file always gets the same
    name, two files never share one, and a folder's masked name prefixes its files' masked paths."""
    return "/".join(_mask_segment(part) for part in path.split("/"))


def _mask_segment(segment: str) -> str:
    masked = mask_secrets(segment)
    if masked == segment:
        return segment
    digest = hashlib.sha256(segment.encode("utf-8", "surrogatepass")).hexdigest()[:PATH_HASH_CHARS]
    return _MARKER.sub(lambda m: f"[REDACTED:{m[1]}~{digest}]", masked)


# --- connection strings ---------------------------------------------------------------------------

# A URL's user info (the user name may be empty: `postgresql://:pw@host` is a password), and a conninfo
# or query-string password (a quoted conninfo value may hold spaces and escaped quotes).
_URL_PASSWORD = re.compile(rf"(?P<head>{_URL_USERINFO})(?P<pw>[^@\s]*+)(?P<tail>@)", re.IGNORECASE)
_KEY_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'?|[^\s&]+)", re.IGNORECASE)


def mask_url(url: str, mask: str = "***") -> str:
    """Hide the password in a connection URL or conninfo string (errors, `ragpg db`, `ragpg config show`)."""
    url = _URL_PASSWORD.sub(lambda m: m["head"] + mask + m["tail"], url)
    return _KEY_PASSWORD.sub(lambda m: m["head"] + mask, url)
