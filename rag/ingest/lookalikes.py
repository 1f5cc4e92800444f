"""Text that may have asked for a confidentiality level without saying it the way the parser reads it.

A note is stored at the most restricted level (fail closed) when any of these holds, since each may
have meant a level stricter than the default (rag.ingest.parse):
- without parsed front matter, its first non-blank line looks like a fence (`+++`, or `---` after
  blank lines or spaces), or its first paragraph sets a level (`lookalike_frontmatter`);
- below parsed front matter, the body's first paragraph (after a fence-like line, if it opens with one)
  sets a level: Obsidian closes front matter with `---` only, so a level after a block closed by `...`
  is one it reads, and a template applied to a note that had front matter leaves a second block
  (`level_set_below`);
- a front matter key is not `confidentiality` but reads as it: a zero-width or other format character,
  a Cyrillic, Greek or fullwidth letter, or a misspelling by a letter or two (`level_key_lookalike`);
- a front matter key names a level in other words (`classification`, `sensitivity`, `clearance`,
  `security_level`, `TLP` ...) with any value but `public`, or flags the note (`confidential`, `secret`,
  `private`, `restricted` ...) with any value but a no (`false`, `no`, `off`, `0`) (`level_key_synonym`).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

LEVEL_KEY = "confidentiality"

_FENCE_LOOKALIKE = re.compile(r"^\s*(?:-{3,}|\+{3,}|\.{3})\s*$")
_SETS_LEVEL = re.compile(r"confidentiality\s*['\"]?\s*[:=]", re.IGNORECASE)
# A line that sets something (`key: value`, `key = value`): its key is checked as a front matter key is.
_KEY_LINE = re.compile(r"^\s*['\"]?(?P<key>[^\s:='\"][^:='\"\n]{0,40}?)['\"]?\s*[:=]")
# Latin look-alikes of Cyrillic and Greek letters (NFKC leaves them as they are), after casefolding.
_CONFUSABLES = str.maketrans({"а": "a", "е": "e", "і": "i", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
                              "ѕ": "s", "ј": "j", "ԁ": "d", "ӏ": "l", "к": "k", "т": "t", "н": "h",
                              "α": "a", "ε": "e", "ι": "i", "ν": "v", "ο": "o", "τ": "t", "κ": "k"})
_MAX_KEY_TYPOS = 2
# Keys (casefolded, without spaces, '_', '-' or '.') that name a level in other words, or hold part of
# one of these words; and keys that flag a note as not for everyone. Issue 47.
_LEVEL_WORD_KEYS = frozenset({"classification", "classified", "sensitivity", "security", "securitylevel",
                              "clearance", "accesslevel", "privacy", "privacylevel", "visibility", "tlp",
                              "marking", "protectivemarking", "handling"})
_LEVEL_WORD_PARTS = ("confidential", "classification", "sensitivity")
_FLAG_KEYS = frozenset({"confidential", "secret", "topsecret", "sensitive", "private", "restricted", "internal",
                        "classified", "nda", "needtoknow"})
_SAYS_PUBLIC = frozenset({"public", "unclassified", "none", "open"})
_SAYS_NO = frozenset({"false", "no", "off", "0", "n"})
_LEVEL_WORDS_IN_TEXT = frozenset({"internal", "confidential", "restricted", "secret", "top secret", "private",
                                  "sensitive", "classified", "high", "amber", "red", "true", "yes", "on", "1"})
_KEY_SEPARATORS = re.compile(r"[\s_.\-]+")


def lookalike_frontmatter(lines: list[str]) -> str | None:
    """Why a note without parsed front matter may still have meant some, or None."""
    for i, line in enumerate(lines):
        line = line.lstrip("\ufeff")
        if not line.strip():
            continue
        if _FENCE_LOOKALIKE.match(line):
            return f"line {i + 1} looks like a front matter fence, but front matter must start with '---' on line 1"
        if any(_sets_level(p) for p in itertools.takewhile(str.strip, lines[i:])):
            return "a confidentiality line outside front matter"
        return None
    return None


def level_set_below(body: list[str]) -> str | None:
    """Why a note whose front matter parsed may still ask for a level below it, or None."""
    rest = list(itertools.dropwhile(lambda line: not line.strip(), body))
    if rest and _FENCE_LOOKALIKE.match(rest[0]):
        rest = list(itertools.dropwhile(lambda line: not line.strip(), rest[1:]))
    if any(_sets_level(line) for line in itertools.takewhile(str.strip, rest)):
        return "a confidentiality line below the front matter"
    return None


def _sets_level(line: str) -> bool:
    """Whether a line outside parsed front matter sets a level: `confidentiality:`, a key reading as it,
    or one asking for a level in other words (`classification: restricted`, `secret: true`)."""
    key = _KEY_LINE.match(line)
    if key is None:
        return bool(_SETS_LEVEL.search(line))
    value = line[key.end():].strip().strip("'\"")
    # in text, only a value that itself names a level or says yes: "Security: see below" is prose
    asks = value.casefold() in _LEVEL_WORDS_IN_TEXT and level_key_synonym({key["key"]: value}) is not None
    return bool(_SETS_LEVEL.search(line)) or level_key_lookalike([key["key"]]) is not None or asks


def level_key_lookalike(keys: Iterable[object]) -> str | None:
    """The first front matter key that reads as `confidentiality` without being it, as a reason; or None."""
    for key in keys:
        name = str(key)
        if name.lower() == LEVEL_KEY:
            continue
        shown = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
        if _edit_distance(shown.casefold().translate(_CONFUSABLES), LEVEL_KEY) <= _MAX_KEY_TYPOS:
            return f"the key {name!r} reads as {LEVEL_KEY!r}"
    return None


def level_key_synonym(frontmatter: Mapping[Any, object]) -> str | None:
    """The first front matter key that asks for a level in other words (see the module's docstring), as
    a reason; or None. `confidentiality` itself and its look-alikes are the other rules' business."""
    for key, value in frontmatter.items():
        name = _plain_key(str(key))
        shown = "" if value is None else str(value).strip().casefold()
        if name == LEVEL_KEY:
            continue
        if name in _FLAG_KEYS:
            if shown not in _SAYS_NO:
                return f"the key {str(key)!r} marks the note {str(value)[:40]!r}"
        elif (name in _LEVEL_WORD_KEYS or any(part in name for part in _LEVEL_WORD_PARTS)) and shown not in _SAYS_PUBLIC:
            return f"the key {str(key)!r} names a level ({str(value)[:40]!r})"
    return None


def _plain_key(name: str) -> str:
    """A key as read: NFKC, no format characters, casefolded, Latin for its look-alikes, no separators."""
    shown = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
    return _KEY_SEPARATORS.sub("", shown.casefold().translate(_CONFUSABLES))


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, or more than _MAX_KEY_TYPOS as soon as the lengths say so."""
    if abs(len(a) - len(b)) > _MAX_KEY_TYPOS:
        return _MAX_KEY_TYPOS + 1
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]
