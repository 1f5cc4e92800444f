"""How notes passages read to a person: heading paths as section labels (`heading_parts`, from
rag.places, which words every surface's headings and locations), file names, passages as
their reader sees them (`plain`), and one-line snippets. The citations an answer makes are `rag.notes.citations`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from rag.notes.question import stem
from rag.obsidian import render_text
from rag.places import heading_parts

__all__ = ["file_name", "heading_parts", "plain", "snippet"]

_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$\n?", re.MULTILINE)
_HEADING_MARK = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+|$)", re.MULTILINE)


def file_name(source_path: str) -> str:
    return posixpath.basename(source_path)


def plain(text: str) -> str:
    """A passage as its reader sees it (rag.obsidian.render_text: links by their words, embeds named,
    markup gone, code as written)."""
    return render_text(text)


def snippet(content: str, terms: Sequence[str], max_chars: int) -> str:
    """A one-line excerpt of at most `max_chars` (plus ellipses), from the sentence sharing most terms.

    Heading lines are left out (the heading is shown beside the excerpt) unless they are all there
    is, when their words are the excerpt (`## Group cards` reads `Group cards`); markdown markup is
    shown as plain text (`plain`). The text comes secret-masked from the
    retrieval passes, so a cut never reveals part of a secret.
    """
    from rag.text import split_sentences, tokenize

    shown = plain(content)
    text = _HEADING_LINE.sub("", shown).strip() or _HEADING_MARK.sub("", shown).strip()
    sentences = split_sentences(text) or [text]
    wanted = {stem(t) for t in terms}
    best = max(range(len(sentences)), key=lambda i: (len(wanted & {stem(t) for t in tokenize(sentences[i])}), -i))
    start = max(text.find(sentences[best]), 0) if best else 0
    lead = "… " if start > 0 else ""
    flat = " ".join(text[start:].split())
    if len(flat) <= max_chars:
        return lead + flat
    cut = flat[:max_chars].rsplit(" ", 1)[0] or flat[:max_chars]
    return lead + cut + " …"
