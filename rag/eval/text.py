"""Text normalisation shared by the golden-file checks and the answer metrics.

One definition, so a fact the golden file accepts as "1-6 words" is counted the same way the
metric later matches it.
"""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """Casefolded words separated by single spaces; punctuation and underscores become spaces."""
    # Case, accents' composed forms, punctuation and spacing must not hide a phrase.
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NON_WORD.sub(" ", folded).split())


def phrase_hits(text: str | None, phrases: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The phrases that occur in `text` as whole words, after normalising both sides."""
    if not text:
        return ()
    padded = f" {normalise(text)} "
    return tuple(p for p in phrases if normalise(p) and f" {normalise(p)} " in padded)
