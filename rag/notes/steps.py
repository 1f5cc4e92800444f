"""A procedure in a passage (a numbered or bulleted list, with the sentence that introduces it), and how
a quoted answer to a how-to question shows it: the lead-in, then each step on its own line, in order.

The lists are read line by line from the passage as its reader sees it (`rag.notes.extractive` hands over
the text with markup, headings and code already taken out), so a step of several sentences stays one
step and a list broken by a blank line stays one list. A list ends at a paragraph that is neither an item
nor indented under one. Its lead-in is the last sentence of the paragraph right before it, when that
sentence ends with ':' ("To install a theme:").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.text import split_sentences

# One list item: its indent, its marker (a bullet or a number) and its text; a task box goes with the marker.
_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+]|(?P<number>\d{1,9})[.)])[ \t]+(?:\[[ xX]\][ \t]+)?(?P<text>\S.*)$")
_INDENTED = re.compile(r"^(?: {2,}|\t)\S")  # a line under an item (its continuation after a blank line)
ELLIPSIS = "…"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Step:
    text: str
    depth: int  # 0: a step of the list; 1: one under the step before it
    number: int | None  # its number in an ordered list, else None (a bullet)


@dataclass(frozen=True)
class Procedure:
    lead_in: str | None
    steps: tuple[Step, ...]

    def holds(self, sentence: str) -> bool:
        """Whether a quoted sentence comes from this list: its lead-in (alone or with its items), a step,
        a sentence of one. Compared word by word: a sentence may join a step to the item under it."""
        words = _words(sentence)
        whole = _words(" ".join([self.lead_in or "", *(step.text for step in self.steps)]))
        return bool(words.strip()) and words in whole


@dataclass(frozen=True)
class StepLimits:
    max_items: int  # steps shown at most; the rest is cut with "…"
    max_chars: int  # characters of step text shown at most (a longer first step is cut at a word)


@dataclass
class _Item:
    indent: int
    number: int | None
    lines: list[str]


def _words(text: str) -> str:
    """The words of `text`, casefolded, each between spaces (so `in` matches whole words)."""
    return f" {' '.join(_WORD.findall(text.casefold()))} "


def read_procedures(text: str, flat: Callable[[str], str]) -> list[Procedure]:
    """The lists of `text` (plain text, one markdown line per line) in reading order; `flat` turns a
    step's or lead-in's text into what a quoted sentence reads like (spacing, punctuation)."""
    found: list[Procedure] = []
    paragraph: list[str] = []  # the lines of the paragraph before a list: its last sentence may lead in
    lead_in: str | None = None
    items: list[_Item] = []
    blank = False
    for line in text.split("\n"):
        item = _ITEM.match(line)
        if item is not None:
            if not items:
                lead_in = _lead_in(paragraph, flat)
            number = item.group("number")
            items.append(_Item(len(item.group("indent").expandtabs(4)), int(number) if number else None,
                               [item.group("text")]))
            paragraph, blank = [], False
        elif not line.strip():
            blank = True
        elif items and (not blank or _INDENTED.match(line)):
            items[-1].lines.append(line)  # the item goes on (a lazy line, or an indented paragraph of it)
            blank = False
        else:
            if items:
                found.append(_procedure(lead_in, items, flat))
                items = []
            paragraph = [line] if blank else [*paragraph, line]
            blank = False
    if items:
        found.append(_procedure(lead_in, items, flat))
    return found


def _lead_in(paragraph: Sequence[str], flat: Callable[[str], str]) -> str | None:
    sentences = split_sentences("\n".join(paragraph))
    last = flat(sentences[-1]) if sentences else ""
    return last if last.endswith(":") else None


def _procedure(lead_in: str | None, items: Sequence[_Item], flat: Callable[[str], str]) -> Procedure:
    """The steps of a list: an item indented past the first one is under the step before it; the steps
    of an ordered list are numbered on from its first number (a list written "1. 1. 1." reads 1, 2, 3)."""
    base = items[0].indent
    start = items[0].number
    steps: list[Step] = []
    top = 0
    for item in items:
        text = flat(" ".join(item.lines))
        if not text:
            continue
        if item.indent > base and steps:
            steps.append(Step(text, 1, None))
            continue
        steps.append(Step(text, 0, None if start is None else start + top))
        top += 1
    return Procedure(lead_in, tuple(steps))


def procedure_lines(procedure: Procedure, citation: str, limits: StepLimits) -> list[str]:
    """The lead-in and the steps, one line each and each cited; past `limits` a last line "…"."""
    lines = [f"{procedure.lead_in} {citation}"] if procedure.lead_in else []
    shown_chars = 0
    for i, step in enumerate(procedure.steps):
        if i >= limits.max_items or (i > 0 and shown_chars + len(step.text) > limits.max_chars):
            lines.append(ELLIPSIS)
            break
        text = _cut(step.text, limits.max_chars)
        shown_chars += len(text)
        marker = "  -" if step.depth else ("-" if step.number is None else f"{step.number}.")
        lines.append(f"{marker} {text} {citation}")
    return lines


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return (text[:max_chars].rsplit(" ", 1)[0] or text[:max_chars]) + f" {ELLIPSIS}"


def lines_with_steps(run: Sequence[str], procedure: Procedure, citation: str, limits: StepLimits, *,
                     show: bool) -> list[str]:
    """The lines of a quoted run (its sentences' texts): its sentences from `procedure` become the procedure's lines, where the first of them stood (when `show`;
    else they are left out, quoted elsewhere), and the sentences around them stay lines of their own."""
    lines: list[str] = []
    pending: list[str] = []
    for text in run:
        if not procedure.holds(text):
            pending.append(text)
            continue
        if pending:
            lines.append(f"{' '.join(pending)} {citation}")
            pending = []
        if show:
            lines += procedure_lines(procedure, citation, limits)
            show = False
    if pending:
        lines.append(f"{' '.join(pending)} {citation}")
    return lines
