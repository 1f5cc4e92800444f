"""Plain-text helpers shared by PRF expansion, lexical rerank and extractive answers."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A compact English stopword list (the usual function words); enough for rerank and expansion.
STOPWORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves
get got also may might must shall s t don doesn didn isn aren wasn weren won wouldn shouldn couldn i'm it's
""".split())

_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]*")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, inner apostrophes and hyphens)."""
    return [t.strip("'-_") for t in _WORD.findall(text.lower()) if t.strip("'-_")]


def content_terms(text: str, *, min_len: int = 2) -> list[str]:
    """Tokens that carry meaning: no stopwords, no one-letter tokens."""
    return [t for t in tokenize(text) if t not in STOPWORDS and len(t) >= min_len]


def unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=[-*+] |\d+\. |#)")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]
