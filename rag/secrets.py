"""Secret masking: the one rule for credentials in note text, applied when a note is indexed.

`mask_secrets` replaces the secret part of credentials with `[REDACTED:<kind>]`, keeping the key
name and the text around it as written. It is idempotent: masked text passes through unchanged.
Detected: private-key blocks; by their shape, wherever they stand (glued to a word by `_`, to letters,
digits or punctuation, in a URL): GitHub, GitLab, AWS access key ids, Slack tokens and webhooks,
OpenAI/Anthropic, Stripe, Google, npm, Hugging Face and SendGrid keys, JWTs; bearer and basic
authorization, credentials in URLs; and `password=`, `secret=`, `token=`, `api_key=`, `API key:`,
`pw=`, `pass:` style assignments (`key: value` counts for the looser names only when the value looks
like a credential rather than prose).

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

# Part of every note's stored version (rag/ingest/pipeline.py): new rules re-index each note once, so text
# stored under the old rules is masked by the new ones at its vault's next run. Raise it when a rule changes.
MASK_RULES_VERSION = "2"
MASK_CACHE_SIZE = 4096  # texts whose masked form is remembered (chunk texts repeat across packs and requests)
PATH_HASH_CHARS = 8  # hex digits of sha256(real name) in a masked name: keeps two masked names apart

# --- secrets ---------------------------------------------------------------------------------

_REDACTED = "[REDACTED:{}]"
_MARKER = re.compile(r"\[REDACTED:([a-z_]+)\]")
_SEPARATOR = r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)"
# A value on a line of its own (YAML, an .ini or .env line: the key starts the line, `:` or an `=` with a
# space beside it) may hold spaces and runs to the line's end or a ` #` comment; anywhere else a bare value
# is one word (`password=hunter2 must be rotated` keeps its last three words).
_LINE_LEAD = r"^(?P<lead>[ \t]*+(?:[-*+>][ \t]++)*+(?:export[ \t]++)?+[\"']?)"
_LINE_SEPARATOR = r"(?P<sep>[\"']?(?:[ \t]*:|[ \t]+=|=(?=[ \t]))[ \t]*)"
_QUOTED_OR = r"(?P<q>[\"'])?(?P<value>(?(q)(?:(?!(?P=q))[^\n])+|{})"
_WORD = r"[^\s\"'`,;&]++)"
_WORDS = r"[^\s\"'`#]\S*+(?:[ \t]++(?!#)\S++)*+)"
# A value after `token:` or `secret:` (not `=`) is masked only when it looks like a credential:
# one word of at least this many characters, or a shorter one mixing letters and digits. "Token:
# the smallest unit of text" is prose; "token: 9f8e7d6c5b4a" is not.
_CREDENTIAL_MIN_CHARS = 16
_MIXED_CREDENTIAL_MIN_CHARS = 8
# A token glued into a word (`risk-Sk-…`) is masked only when it looks generated: letters of both cases,
# digits, and a run of this many letters and digits (`risk-assessment-2024-q3` is a file name).
_GLUED_RANDOM_RUN_CHARS = 20
_RANDOM_RUN = re.compile(f"[A-Za-z0-9]{{{_GLUED_RANDOM_RUN_CHARS}}}")

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str], tuple[str, ...]]


def _token(kind: str, pattern: str, *literals: str) -> Rule:
    """A token known by its shape alone, found wherever it stands (no word boundary: `deploy_ghp_…`,
    `key_AKIA…`). Each repeat is possessive, so a long run is read once."""
    return re.compile(pattern), lambda m: _REDACTED.format(kind), literals


def _key_named(*names: str) -> str:
    """The end of a key (a run of word characters, dots and dashes, as `aws.secret_access_key`): one of
    `names`, perhaps followed by a word saying it holds the value (`secret_value`, `PASSWORD_STR`). The match
    starts at the name, so the scan looks for its letters alone, and the run before it stays as written."""
    return rf"(?:{'|'.join(names)})(?:[_-]?(?:value|val|str|string|text|data|plain|raw))?(?![\w.-])"


def _credential_like(word: str) -> bool:
    if not word or any(c.isspace() for c in word):
        return False
    mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    return len(word) >= _CREDENTIAL_MIN_CHARS or (mixed and len(word) >= _MIXED_CREDENTIAL_MIN_CHARS)


# A value that names or computes a secret rather than being one: `token = get_token()`,
# `TOKEN=$GITHUB_TOKEN`, `secret == None`, `token: <your token>`. Left as written (code stays readable).
_REFERENCE = re.compile(r"^=|[(\[{$<]")
_NON_VALUES = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def _split_trailing(word: str) -> tuple[str, str]:
    """A one-word value and the punctuation after it that belongs to the sentence: a final `.`, `:`, `!`,
    `?`, and closing brackets the value did not open (`(password=hunter2)`, `password=[hunter2]`)."""
    unclosed = {c: word.count(c) - word.count(o) for c, o in _CLOSERS.items()}
    end = len(word)
    while end and (word[end - 1] in ".:!?" or unclosed.get(word[end - 1], 0) > 0):
        if word[end - 1] in unclosed:
            unclosed[word[end - 1]] -= 1
        end -= 1
    return word[:end], word[end:]


def _parts(m: re.Match[str]) -> tuple[str, str, str]:
    """(the text before the value, the value, the text after it that stays)."""
    head = f"{m.groupdict().get('lead') or ''}{m['key']}{m['sep']}{m['q'] or ''}"
    if m["q"] or "lead" in m.groupdict():
        return head, m["value"], ""
    value, tail = _split_trailing(m["value"])
    return head, value, tail


def _assignment(kind: str, key: str, literals: tuple[str, ...], *, generic: bool = False,
                key_start: str = r"[\w.-]*?") -> tuple[Rule, Rule]:
    """`key: value` on a line of its own (`key_start` is what may come before `key` after the line's lead,
    read lazily from there: one start per line), then anywhere. `generic`: `secret=…` always, `secret: …`
    only when the value looks like a credential; else every value is masked."""
    def replace(m: re.Match[str]) -> str:
        head, value, tail = _parts(m)
        if not value or value.startswith("[REDACTED:"):
            return m[0]
        marker = _REDACTED.format(kind)
        if not generic:
            return head + marker + tail
        if _REFERENCE.search(value) or value.lower() in _NON_VALUES:
            return m[0]
        if "=" in m["sep"]:
            return head + marker + tail
        if m["q"]:
            return head + marker + tail if _credential_like(value) else m[0]
        first, *rest = re.split(r"(?=[ \t])", value, maxsplit=1)  # the rest of a line of prose stays
        return head + marker + "".join(rest) + tail if _credential_like(first) else m[0]

    line = re.compile(_LINE_LEAD + f"(?P<key>{key_start}{key})" + _LINE_SEPARATOR + _QUOTED_OR.format(_WORDS),
                      re.IGNORECASE | re.MULTILINE)
    anywhere = re.compile(f"(?P<key>{key})" + _SEPARATOR + _QUOTED_OR.format(_WORD), re.IGNORECASE)
    return (line, replace, literals), (anywhere, replace, literals)


def _generated(m: re.Match[str]) -> str:
    """An `sk-` key: it holds a digit; glued into a word (`risk-…`) it must also look generated."""
    body = m["body"]
    glued = m.start() > 0 and (m.string[m.start() - 1].isalnum() or m.string[m.start() - 1] in "_-")
    looks_generated = (_RANDOM_RUN.search(body) is not None and any(c.isupper() for c in body)
                       and any(c.islower() for c in body))
    if any(c.isdigit() for c in body) and (looks_generated or not glued):
        return _REDACTED.format("api_key")
    return m[0]


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


def _bearer(m: re.Match[str]) -> str:
    return f"{m['head']}{_REDACTED.format('bearer_token')}"


_PEM_LABEL = r"(?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?"
_B64_LINES = r"(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+"
_PEM_BLOCK = re.compile(rf"(?P<begin>-----BEGIN {_PEM_LABEL}-----)[\s\S]*?(?:(?P<end>-----END {_PEM_LABEL}-----)|\Z)")
# A chunk can start inside a key block whose BEGIN line went to the previous chunk.
_PEM_TAIL = re.compile(rf"\A(?P<begin>){_B64_LINES}(?P<end>-----END {_PEM_LABEL}-----)")


# A URL's user info up to its password: `://` after a scheme's last character (the scan looks for `://`
# alone; the scheme before it stays as written), a user name (which may be empty: `postgresql://:pw@host`
# holds a password) and `:`.
_URL_USERINFO = r"://(?<=[A-Za-z0-9+.-]://)[^\s:/@]*+:"
_GITLAB_KINDS = ("pat", "dt", "rt", "ptt", "ft", "soat", "cbt", "imt", "oas", "agent")  # glpat-, gldt-, …
_SECRET_PAIRS = (r"client[_-]?secret", r"secret[_-]?key", r"access[_-]?token", r"auth[_-]?token", r"refresh[_-]?token")


def _rules(keep_lines: bool) -> tuple[Rule, ...]:
    """Order matters: whole blocks first, then token shapes (they name a precise kind; the longer shapes
    first, so one glued inside another cannot split it), then key=value forms, whose callbacks leave
    already-redacted values alone. Only the key blocks span lines; with `keep_lines` their replacement
    keeps every line break. Each rule comes with the lower-case literals one of which every match holds:
    most text holds none, and a substring test is far cheaper than a scan."""
    return (
        (_PEM_BLOCK, _pem(keep_lines), ("-----begin",)),
        (_PEM_TAIL, _pem_tail(keep_lines), ("-----end",)),
        # (a header of at most 1 KB, read without backtracking: a run of "eyJa" is linear)
        _token("jwt", r"eyJ[A-Za-z0-9_-]{5,1024}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+", "eyj"),
        _token("github_token", r"github_pat_[A-Za-z0-9_]{30,}+|gh[pousr]_[A-Za-z0-9]{30,}+",
               "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _token("gitlab_token", rf"gl(?:{'|'.join(_GITLAB_KINDS)})-[A-Za-z0-9_-]{{20,}}+",
               *(f"gl{k}-" for k in _GITLAB_KINDS)),
        _token("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]++",
               "hooks.slack.com"),
        _token("slack_token", r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,}+", "xox", "xapp-"),
        _token("sendgrid_key", r"SG\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+", "sg."),
        (re.compile(r"sk-(?P<body>[A-Za-z0-9_-]{20,}+)"), _generated, ("sk-",)),
        _token("api_key", r"(?:[rs]k_(?:live|test)_|whsec_)[A-Za-z0-9]{16,}+", "k_live_", "k_test_", "whsec_"),
        _token("api_key", r"AIza[0-9A-Za-z_-]{35,}+", "aiza"),
        _token("npm_token", r"npm_[A-Za-z0-9]{30,}+", "npm_"),
        _token("huggingface_token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}+", "hf_", "api_org_"),
        _token("aws_access_key_id", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16,}+",
               "akia", "asia", "abia", "acca", "a3t"),
        *_assignment("aws_secret_access_key", _key_named(r"secret[_-]?access[_-]?key"), ("secret",)),
        *_assignment("password", _key_named("password", "passwd", "passphrase", "pwd"),
                     ("password", "passwd", "passphrase", "pwd")),
        *_assignment("api_key", _key_named(r"api[_-]?key"), ("apikey", "api_key", "api-key")),
        *_assignment("secret", _key_named(*_SECRET_PAIRS), ("secret", "token")),
        # short names only as a whole key or its last part (`pw`, `DB_PASS`; never `bypass`, `compass`). Each
        # key below starts with a plain letter, which the scan looks for before anything costlier.
        *_assignment("password", r"p(?<![^\W_]p)(?:ass|w)(?![\w.-])", ("pass", "pw"), generic=True,
                     key_start=r"(?:[\w.-]*?[_.-])?"),
        *_assignment("api_key", r"a(?<![\w.-]a)pi[ \t]+key(?![\w.-])", ("api",), generic=True, key_start=""),
        *_assignment("secret", r"(?:s(?<![\w.-]s)ecret|a(?<![\w.-]a)ccess)[ \t]+key(?![\w.-])", ("secret", "access"),
                     generic=True, key_start=""),
        *_assignment("secret", _key_named("secret"), ("secret",), generic=True),
        *_assignment("token", _key_named("token"), ("token",), generic=True),
        (re.compile(r"(?P<head>(?<![^\W_])Authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:Bearer|Basic|Token)[ \t]+)"
                    r"(?!\[REDACTED:)[^\s\"']+", re.IGNORECASE), _bearer, ("authorization",)),
        (re.compile(r"(?P<head>(?<![^\W_])Bearer[ \t]+)(?!\[REDACTED:)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*"),
         _bearer, ("bearer",)),
        # Credentials inside URLs: postgres://user:secret@host
        # (`//[REDACTED:github_token]@` is a masked user name, not a password)
        (re.compile(rf"(?P<head>{_URL_USERINFO})(?<!\[REDACTED:)(?!\[REDACTED:)[^\s@/]++(?=@)"),
         lambda m: f"{m['head']}{_REDACTED.format('password')}", ("://",)),
    )


_SECRET_RULES = _rules(keep_lines=False)
_SECRET_RULES_KEEPING_LINES = _rules(keep_lines=True)
_ALL_SECRET_LITERALS = tuple(sorted({x for _, _, xs in _SECRET_RULES for x in xs}))


def _mask(text: str, rules: tuple[Rule, ...]) -> str:
    lowered = text.lower()
    found = {literal for literal in _ALL_SECRET_LITERALS if literal in lowered}
    if not found:
        return text
    for pattern, replace, literals in rules:
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
