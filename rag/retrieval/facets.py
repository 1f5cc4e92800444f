"""Questions that join topics: split "X and Y", "compare X with Y", "X, then Y" into facets.

Each facet is searched as its own query next to the whole question and the lists are fused by
reciprocal rank fusion in one SQL call (`match_hybrid_multi_chunks_*`), so a note that answers
only one half still reaches the top of the ranking. A split is kept only when every side holds
at least `min_terms` content words: "salt and pepper" stays one facet, "how do I sync my vault
and how do I publish it" becomes two.
"""

from __future__ import annotations

import re

from rag.text import content_terms

MAX_FACETS = 3
_COMPARE = re.compile(r"\b(?:compare|comparing|difference between|differences between)\b", re.IGNORECASE)
# Joiners between two clauses. "and" alone joins too much ("notes and folders"), so the split
# is only kept when both sides are substantial (see `split_facets`).
_JOINERS = re.compile(r"\s*(?:,\s*(?:and\s+)?then\b|\band\s+then\b|\bthen\b|;|\band\s+also\b|\band\b|"
                      r"\bversus\b|\bvs\.?\b|\bas well as\b)\s*", re.IGNORECASE)
# After "compare X ..." the second side is also introduced by "with" or "to".
_COMPARE_JOINERS = re.compile(r"\s*\b(?:with|to|against)\b\s*", re.IGNORECASE)


def split_facets(question: str, *, min_terms: int = 2, max_facets: int = MAX_FACETS) -> list[str]:
    """The facets of a question that joins topics, or [] when it asks about one thing."""
    text = question
    pieces = _JOINERS.split(text)
    if _COMPARE.search(text):
        text = _COMPARE.sub(" ", text)
        pieces = [q for p in _JOINERS.split(text) for q in _COMPARE_JOINERS.split(p)]
    parts = [p.strip(" ,.?!") for p in pieces]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return []
    merged: list[str] = []
    for part in parts:  # a side too small to stand alone joins its left neighbour
        if merged and len(content_terms(part)) < min_terms:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    if len(merged) >= 2 and len(content_terms(merged[0])) < min_terms:
        merged[1] = f"{merged[0]} {merged[1]}"
        merged = merged[1:]
    if len(merged) < 2:
        return []
    return [" ".join(f.split()) for f in merged[:max_facets]]
