"""The notes context format, the citations an answer makes, and references built from them.

Context (one block per passage, numbered in rank order):

    [Chunk 1]
    [Vault: work] File: projects/alpha.md
    Section: Alpha > Timeline
    Content:
    <text>

followed by the instruction to cite as `[File: filename.md, Section: section name]`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.notes.question import stem
from rag.types import Candidate

CITE_INSTRUCTION = ("Cite every statement you take from these notes as [File: filename.md, Section: section name], "
                    "using the file name and section shown above.")

_HEADING_SPLIT = re.compile(r"\s+>\s+|\n")  # the chunker writes "# A > ## B"
_CITED_SECTION_SPLIT = re.compile(r"\s+(?:>|/|\u203a|\u00bb)\s+")
_CITATION = re.compile(
    r"\[\s*File:\s*(?P<file>[^,\]\n]+?)\s*(?:[,;|]\s*Section:\s*(?P<section>[^\]\n]*?)\s*)?\]", re.IGNORECASE)
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$\n?", re.MULTILINE)
_CHUNK_MARKER = re.compile(r"\s*\[Chunk\s+\d+\]", re.IGNORECASE)
_NO_SECTION = {"", "none", "-", "(none)", "n/a", "top", "(top)"}


def heading_parts(heading_path: str) -> list[str]:
    return [p.strip().lstrip("#").strip() for p in _HEADING_SPLIT.split(heading_path or "") if p.strip().lstrip("#")]


def section_label(heading_path: str) -> str:
    """`a > b` for a heading path, or '' when the passage sits above the first heading."""
    return " > ".join(heading_parts(heading_path))


def file_name(source_path: str) -> str:
    return posixpath.basename(source_path)


def format_context(chunks: Sequence[Candidate]) -> str:
    blocks = []
    for n, c in enumerate(chunks, start=1):
        section = section_label(c.heading_path) or "(top of the note)"
        blocks.append(f"[Chunk {n}]\n[Vault: {c.vault}] File: {c.source_path}\nSection: {section}\n"
                      f"Content:\n{c.content.strip()}\n")
    return "\n".join(blocks) + "\n" + CITE_INSTRUCTION


def citation_for(c: Candidate) -> str:
    section = section_label(c.heading_path)
    parts = heading_parts(c.heading_path)
    return f"[File: {file_name(c.source_path)}, Section: {parts[-1] if parts else section or '(top of the note)'}]"


@dataclass(frozen=True)
class Citation:
    text: str
    file: str
    section: str


def parse_citations(answer: str) -> list[Citation]:
    return [Citation(m.group(0), m.group("file").strip().strip("'\"`"), (m.group("section") or "").strip().strip("'\"`"))
            for m in _CITATION.finditer(answer or "")]


def strip_chunk_markers(answer: str) -> str:
    """Remove `[Chunk N]` labels a model may echo from the context format."""
    return _CHUNK_MARKER.sub("", answer).strip()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\\", "/")).strip().lower()


def _file_matches(cited: str, source_path: str) -> bool:
    """`alpha.md`, `alpha`, `projects/alpha.md` and `work/projects/alpha.md` all name `projects/alpha.md`."""
    cited_n, path_n = _norm(cited).removeprefix("./"), _norm(source_path)
    names = {path_n, posixpath.basename(path_n)}
    names |= {posixpath.splitext(n)[0] for n in names}
    return cited_n in names or path_n.endswith("/" + cited_n) or cited_n.endswith("/" + path_n)


def _section_matches(cited: str, heading_path: str) -> bool:
    cited_n = _norm(cited).lstrip("#").strip()
    parts = [_norm(p) for p in heading_parts(heading_path)]
    if cited_n in _NO_SECTION or cited_n == "(top of the note)":
        return not parts
    if not parts:
        return False
    full = " > ".join(parts)
    cited_parts = [_norm(p.strip().lstrip("#").strip()) for p in _CITED_SECTION_SPLIT.split(cited) if p.strip()]
    return (cited_n == full or cited_n == parts[-1] or " > ".join(cited_parts) == full
            or (bool(cited_parts) and parts[-len(cited_parts):] == cited_parts) or cited_n in parts)


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


@dataclass
class CitationMatch:
    """Which passages (indexes into the context's chunk list) the answer's citations point at."""

    used: list[int] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    by_file_only: list[str] = field(default_factory=list)

    def debug(self) -> dict[str, Any]:
        return {"matched_chunks": [i + 1 for i in self.used], "unmatched_citations": self.unmatched,
                "matched_by_file_only": self.by_file_only}


def match_citations(citations: Sequence[Citation], chunks: Sequence[Candidate]) -> CitationMatch:
    """Match each citation to passages by file (path or name) and section.

    A citation whose file matches but whose section names no passage of that file points at all
    of that file's passages (the model paraphrased the heading). A citation naming no passage's
    file is ignored and listed in `unmatched`.
    """
    result = CitationMatch()
    for cite in citations:
        files = [i for i, c in enumerate(chunks) if _file_matches(cite.file, c.source_path)]
        if not files:
            result.unmatched.append(cite.text)
            continue
        hits = [i for i in files if _section_matches(cite.section, chunks[i].heading_path)]
        if not hits:
            hits = files
            result.by_file_only.append(cite.text)
        for i in hits:
            if i not in result.used:
                result.used.append(i)
    return result


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
