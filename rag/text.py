"""The Python side of text analysis, in one place: tokens, stopwords and stems for what Python compares
with Python (PRF expansion, the Auto-RAG set score, facets, a question's words against answer
sentences). Whatever is compared with what Postgres indexed goes through Postgres' own analyzer
instead (`ragpg_query_term_stats`, `rag.retrieval.terms`), never through these."""

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


def stem(token: str) -> str:
    """A light English stem, enough to match inflections: notes/note, linked/linking/link,
    creates/created/creating/create, libraries/library, keys/key. Tokens of three letters are kept."""
    t = token.removesuffix("'s")
    if len(t) <= 3:
        return t
    if len(t) == 4:  # keys, tags, docs, uses
        return t[:-1] if t.endswith("s") and not t.endswith(("ss", "us", "is")) else t
    if t.endswith("ies") and len(t) > 5:
        t = t[:-3] + "y"
    elif t.endswith(("sses", "xes", "ches", "shes", "zes")):
        t = t[:-2]
    elif t.endswith("s") and not t.endswith(("ss", "us", "is")):
        t = t[:-1]
    elif t.endswith(("ing", "ed")) and len(t) > 5 + (t[-1] == "g"):
        t = t[:-3] if t.endswith("ing") else t[:-2]
        if len(t) >= 4 and t[-1] == t[-2] and t[-1] not in "aeioulsz":  # running, shipped
            t = t[:-1]
    if len(t) > 4 and t.endswith("e"):
        t = t[:-1]
    return t


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
