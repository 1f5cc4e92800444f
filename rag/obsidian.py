"""Obsidian markdown as a reader sees it: the text with its markup rendered, and the links it holds.

`render_note(text)` returns the text a reader of the note sees — `[[Core plugins|core plugin]]` is
"core plugin", `[[Ribbon]]` is "Ribbon", `![[obsidian-icon-dice.svg#icon]]` is "(the dice icon)",
`==x==` is "x", a callout's `> [!tip] Title` is "Title" (a bare `> [!tip]` is "Tip"), comments `%% … %%` and block ids
` ^abc` are gone — and the structure separately: every wikilink, embed and markdown link to a note or
file (`LinkRef`, with the line it is on, the words it is shown with and its heading or block), the
inline tags and the block ids. Lines stay where they were (a line of the note is the same line of the
rendered text, a comment spanning lines leaves them empty), so a citation by line points into the
user's file either way.

Pure functions over a string: no file access, no database. The index keeps the note's own text (its
markup helps the embedding and BM25 find it); every surface that shows a passage — quoted answers,
snippets, the context, a fetched chunk — shows `render_text` of it. Code (inline or fenced) is shown as
written, as Obsidian's reading view shows it. Resolving a link's target to a note is
`rag.ingest.link_resolution`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import unquote, urlsplit

LinkKind = Literal["link", "embed"]

# File kinds an embed can show, by extension; anything else with an extension is a file too.
_IMAGE = frozenset({"png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "tif", "tiff"})
_AUDIO = frozenset({"mp3", "wav", "m4a", "ogg", "3gp", "flac", "webm"})
_VIDEO = frozenset({"mp4", "mkv", "mov", "ogv"})
_NOTE_SUFFIXES = frozenset({"md", "canvas", "base"})
# Words in an icon's file name that say it is an icon rather than what it shows.
_ICON_NOISE = frozenset({"obsidian", "icon", "lucide", "svg"})

_WIKILINK = re.compile(r"(?P<bang>!?)\[\[(?P<inner>[^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(?P<bang>!?)\[(?P<label>[^\[\]\n]*)\]\((?P<url><[^>\n]+>|[^()\s]+(?:\([^()\s]*\))?)"
                      r"(?:\s+\"[^\"\n]*\")?\)")
_HIGHLIGHT = re.compile(r"==(?=\S)(?P<inner>[^=\n]+?)(?<=\S)==")
# The inner text never holds the marker: each marker pairs with the next one (linear; with `.+?` a line of
# unclosed markers was read to its end from every one of them).
_BOLD = re.compile(r"(?P<m>\*\*|__)(?=\S)(?P<inner>(?:(?!(?P=m))[^\n])+?)(?<=\S)(?P=m)")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)(?P<inner>[^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)(?P<inner2>[^_\n]+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(?P<inner>[^~\n]+?)(?<=\S)~~")
_CODE_SPAN = re.compile(r"(?P<ticks>`+)(?P<inner>.+?)(?P=ticks)")
_BLOCK_ID = re.compile(r"(?:^|\s)\^(?P<id>[A-Za-z0-9-]+)\s*$")
_TAG = re.compile(r"(?<![\w/#&])#(?P<tag>[A-Za-z_\u00c0-\uffff][\w\u00c0-\uffff/-]*)")
_CALLOUT = re.compile(r"^(?P<quote>(?:>\s*)+)\[!(?P<type>[A-Za-z-]+)\][+-]?\s*(?P<title>.*)$")
_QUOTE = re.compile(r"^(?:>\s?)+")
_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})")
# Only HTML's own elements: `<command-id>` in a note is a placeholder the reader must see.
_HTML_ELEMENTS = ("a|abbr|audio|b|blockquote|br|center|cite|code|dd|del|details|div|dl|dt|em|figcaption|"
                  "figure|font|h[1-6]|hr|i|iframe|img|ins|kbd|li|mark|ol|p|pre|q|s|section|small|source|"
                  "span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|u|ul|video")
_HTML_TAG = re.compile(rf"</?(?:{_HTML_ELEMENTS})(?:\s[^<>]*)?/?>", re.IGNORECASE)


@dataclass(frozen=True)
class LinkRef:
    """One link or embed as written in a note. `target` is the note or file named (no heading or
    block; empty for a link within the note itself), `text` the words it is shown with."""

    target: str
    kind: LinkKind
    line: int  # 1-based, in the note's text
    text: str
    heading: str | None = None
    block: str | None = None
    markdown: bool = False  # [text](target.md) rather than [[target]]

    @property
    def is_file(self) -> bool:
        """Names an attachment (an image, a PDF, …) rather than a note."""
        suffix = PurePosixPath(self.target).suffix.lower().lstrip(".")
        return bool(suffix) and suffix not in _NOTE_SUFFIXES and bool(re.fullmatch(r"[a-z0-9]{1,5}", suffix))


@dataclass(frozen=True)
class RenderedNote:
    text: str  # as a reader sees it; the same lines as the note
    links: list[LinkRef] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # inline tags, without '#', in order, once each
    block_ids: list[str] = field(default_factory=list)


def render_note(text: str) -> RenderedNote:
    """The note as a reader sees it, and its links, tags and block ids."""
    lines = _without_comments(text).split("\n")
    links: list[LinkRef] = []
    tags: list[str] = []
    blocks: list[str] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is not None or opened:  # code is shown as written (no links, tags or markup in it)
            if opened and (fence is None or opened["fence"].startswith(fence)):
                fence = None if fence is not None else opened["fence"][:3]
            continue
        lines[i] = _render_line(line, i + 1, links, tags, blocks)
    return RenderedNote("\n".join(lines), links, list(dict.fromkeys(tags)), blocks)


def render_text(text: str) -> str:
    """Only the text a reader sees (for a passage, a sentence, a heading)."""
    return render_note(text).text


def _without_comments(text: str) -> str:
    """`%% … %%` removed, inline or across lines; the newlines of a comment stay."""
    def blank(m: re.Match[str]) -> str:
        return "\n" * m[0].count("\n")

    return re.sub(r"%%.*?(?:%%|\Z)", blank, text, flags=re.S)


def _render_line(line: str, number: int, links: list[LinkRef], tags: list[str], blocks: list[str]) -> str:
    block = _BLOCK_ID.search(line)
    if block:
        blocks.append(block["id"])
        line = line[:block.start()].rstrip()
    line = _render_quote_or_callout(line)  # a heading keeps its '#'s: plain text's way of showing one
    # inline code is shown as written: only the text between code spans is rendered
    parts: list[str] = []
    at = 0
    for code in _CODE_SPAN.finditer(line):
        parts.append(_render_inline(line[at:code.start()], number, links, tags))
        parts.append(code[0])  # with its backticks: a reader sees it set as code
        at = code.end()
    parts.append(_render_inline(line[at:], number, links, tags))
    return "".join(parts)


def _render_inline(text: str, number: int, links: list[LinkRef], tags: list[str]) -> str:
    text = _WIKILINK.sub(lambda m: _wikilink(m, number, links), text)
    text = _MD_LINK.sub(lambda m: _markdown_link(m, number, links), text)
    tags.extend(m["tag"].rstrip("/") for m in _TAG.finditer(text))
    text = _HTML_TAG.sub("", text)
    for pattern in (_HIGHLIGHT, _BOLD, _STRIKE):
        text = pattern.sub(lambda m: m["inner"], text)
    return _ITALIC.sub(lambda m: m["inner"] or m["inner2"], text)


def _render_quote_or_callout(line: str) -> str:
    callout = _CALLOUT.match(line)
    if callout:  # Obsidian shows the callout's title, or its type when it has none
        return callout["title"].strip() or callout["type"].replace("-", " ").capitalize()
    return _QUOTE.sub("", line)


def _split_target(inner: str) -> tuple[str, str | None, str | None, str | None]:
    """`Target#Heading|alias` -> (target, heading, block, alias). In a table the `|` is escaped."""
    target, _, alias = inner.replace("\\|", "|").partition("|")
    target, _, anchor = target.partition("#")
    heading = block = None
    if anchor.startswith("^"):
        block = anchor[1:].strip() or None
    elif anchor:
        heading = anchor.strip() or None
    return target.strip(), heading, block, alias.strip() or None


def _shown_name(target: str) -> str:
    name = PurePosixPath(target).name
    return name[:-3] if name.lower().endswith(".md") else name


def _wikilink(m: re.Match[str], line: int, links: list[LinkRef]) -> str:
    target, heading, block, alias = _split_target(m["inner"])
    kind: LinkKind = "embed" if m["bang"] else "link"
    ref = LinkRef(target, kind, line, "", heading, block)
    text = _file_text(target, heading, alias) if ref.is_file else _note_text(target, heading, alias)
    links.append(LinkRef(target, kind, line, text, heading, block))
    return text


def _note_text(target: str, heading: str | None, alias: str | None) -> str:
    if alias:
        return alias
    name = _shown_name(target)
    if heading:
        return f"{name} > {heading}" if name else heading
    return name


def _file_text(target: str, anchor: str | None, alias: str | None) -> str:
    """What an embedded file is, in words: "(the dice icon)", "(image: Engelbart)"."""
    path = PurePosixPath(target)
    suffix = path.suffix.lower().lstrip(".")
    words = re.sub(r"[-_]+", " ", path.stem).strip()
    if anchor == "icon" or "icon" in path.stem.lower().split("-"):
        what = " ".join(w for w in words.split() if w.lower() not in _ICON_NOISE)
        return f"(the {what} icon)" if what else "(an icon)"
    label = alias if alias and not re.fullmatch(r"\d+(x\d+)?", alias) else words
    kind = ("image" if suffix in _IMAGE else "audio" if suffix in _AUDIO else "video" if suffix in _VIDEO
            else "PDF" if suffix == "pdf" else "file")
    return f"({kind}: {label})"


def _markdown_link(m: re.Match[str], line: int, links: list[LinkRef]) -> str:
    url = m["url"].strip("<>")
    label = m["label"]
    try:
        parts = urlsplit(url)
    except ValueError:  # a web address urllib cannot read (a masked password: `//u:[REDACTED:password]@h`)
        return label or url
    if parts.scheme or url.startswith("//"):  # a web address: shown by its words
        return label or url
    target = unquote(parts.path)
    heading = unquote(parts.fragment) or None
    kind: LinkKind = "embed" if m["bang"] else "link"
    probe = LinkRef(target, kind, line, "")
    text = (_file_text(target, heading, label) if probe.is_file and kind == "embed"
            else label or _note_text(target, heading, None))
    if target or heading:
        links.append(LinkRef(target, kind, line, text, heading, None, markdown=True))
    return text
