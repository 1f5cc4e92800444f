"""How notes passages read to a person: heading paths as section labels, file names, markdown
made plain text, and one-line snippets. The citations an answer makes are `rag.notes.citations`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from rag.notes.question import stem

_HEADING_SPLIT = re.compile(r"\s+>\s+|\n")  # the chunker writes "# A > ## B"
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$\n?", re.MULTILINE)


def heading_parts(heading_path: str) -> list[str]:
    return [p.strip().lstrip("#").strip() for p in _HEADING_SPLIT.split(heading_path or "") if p.strip().lstrip("#")]


def file_name(source_path: str) -> str:
    return posixpath.basename(source_path)


# -- markdown / Obsidian markup as plain text ------------------------------------------------------

# Markdown / Obsidian markup -> plain text.
_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\)")
_WIKI = re.compile(r"\[\[([^\]|#^\n]*)([#^][^\]|\n]*)?(?:\|([^\]\n]*))?\]\]")
_LINK = re.compile(r"\[([^\]\n]+)\]\((?:[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_EMPHASIS = re.compile(r"(\*\*|__|==|~~)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*_])([*_])(?=[^\s*_])([^*_\n]+?)(?<=[^\s*_])\1(?![\w*_])")
_CALLOUT = re.compile(r"^\s*>\s?(?:\[![^\]\n]*\][+-]?\s*)?", re.MULTILINE)
# Only real HTML tags: `<command-id>` placeholders in prose stay.
_HTML_TAG = re.compile(r"</?(?:a|b|i|u|s|em|strong|span|div|p|br|hr|sup|sub|mark|font|kbd|small|center|img|details"
                       r"|summary|iframe|u|ins|del|code)(?:\s[^>\n]*)?/?>", re.IGNORECASE)


_CODE_SPAN = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[ \t]*$|(`+)(?:(?!\2).)+?\2", re.MULTILINE | re.DOTALL)


def _wiki_text(m: re.Match[str]) -> str:
    target, anchor, alias = m.group(1), m.group(2), m.group(3)
    if alias and alias.strip():
        return alias.strip()
    if target and target.strip():
        return target.strip()
    return (anchor or "").lstrip("#^").strip()


def _plain_prose(text: str) -> str:
    text = _EMBED.sub("", text)
    text = _WIKI.sub(_wiki_text, text)
    text = _LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    for _ in range(2):  # nested emphasis such as **==x==**
        text = _EMPHASIS.sub(r"\2", text)
    return _ITALIC.sub(r"\2", text)


def plain(text: str) -> str:
    """Markdown markup of one passage made readable as plain text (content is kept, markup goes).

    Code (inline or fenced) is kept as written: `[[Example]]` in backticks shows the syntax being explained."""
    text = _CALLOUT.sub("", text)
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_plain_prose(text[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(_plain_prose(text[last:]))
    return "".join(out)


def snippet(content: str, terms: Sequence[str], max_chars: int) -> str:
    """A one-line excerpt of at most `max_chars` (plus ellipses), from the sentence sharing most terms.

    Heading lines are left out (the heading is shown beside the excerpt) unless they are all there
    is; markdown markup is shown as plain text (`plain`). The text comes secret-masked from the
    retrieval passes, so a cut never reveals part of a secret.
    """
    from rag.text import split_sentences, tokenize

    shown = plain(content)
    text = _HEADING_LINE.sub("", shown).strip() or shown.strip()
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
