"""The answer without a language model: the best-matching sentences of the top passages, each cited.

Sentences come from the passages the answer draws on (K), with markdown markup turned into
plain text (wiki links show their text, embedded images and callout markers go); a sentence that
introduces a list ("... the following file types:") carries the list's items with it.

A sentence scores the weighted share of the question's content terms it contains (terms compared
by a light stem, so "notes" matches "note"). A term's weight is its rarity among the passages the
answer draws on, `log(1 + n / df)`: a word found in every passage (often the app or project name)
says less about where the answer is than one found in a single passage. A term the sentence's note
title holds is left out of its share: it says which note, not which sentence of it (retrieval has
already weighed it). The best sentences (at most
`count`, the detail's `answer_sentences`, each scoring at least `min_share_of_best` of the best
score; or else the top passage's first sentence) are quoted in reading order (passage rank, then
position), each followed by `[File: name.md, Section: heading]`. A question that asks several things
has, after its best sentence, the best sentence of each part the quoted ones cover least
(`favour_parts`). Secrets come masked
from the retrieval passes. A sentence the injection guard flags (`rag.ingest.guard`: "ignore all
previous instructions", role markers, ...) is never quoted, whatever its score: not as the best
sentence, not beside one, not as the fallback; a passage of such sentences only leaves no answer.
A how-to question's best run, when it comes from a list, is quoted as that list's steps (`rag.notes.steps`).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from rag.ingest.guard import assess_injection
from rag.notes.citations import citation_for
from rag.notes.format import heading_parts, plain
from rag.notes.question import match_terms, stem
from rag.notes.shapes import Shape
from rag.notes.steps import Procedure, StepLimits, lines_with_steps, read_procedures
from rag.secrets import mask_secrets
from rag.text import split_sentences, tokenize
from rag.types import Candidate

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s.*)?$", re.MULTILINE)
# A line in bold only, not ending like a sentence: a heading in all but name.
_PSEUDO_HEADING = re.compile(r"^ {0,3}(\*\*|__)[^\n]*?[^.!\n]\1:?[ \t]*$", re.MULTILINE)
# A line of links only ("See [[A]], [[B]]" style navigation), which answers nothing. A list item of links
# stays: after a sentence ending in ':' it is what the sentence introduces ("refunds for: - [[Sync]]").
_LINK = r"(?:!?\[\[[^\]]+\]\]|!?\[[^\]]*\]\([^)]*\))"
# (Its start reads spaces and tabs only: `\s*` there crossed line breaks, so from each of many blank lines
# it read all the rest.)
_LINK_ONLY = re.compile(rf"^(?![ \t]*[-*+][ \t])[ \t]*(?:[\w ]{{1,24}}:[ \t]*)?{_LINK}(?:[\s,;|·–-]*{_LINK})*\s*[.]?\s*$",
                        re.MULTILINE)
# Quote markers of blockquotes and callouts; a callout's title line ("> [!tip] Title") is a heading.
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_CALLOUT_TITLE = re.compile(r"^[ \t]*(?:>[ \t]?)+\[![^\]]*\][-+]?[^\n]*$", re.MULTILINE)
_CALLOUT = re.compile(r"^[ \t]*(?:>[ \t]?)+\[![^\]]*\][^\n]*(?:\n[ \t]*>[^\n]*)*", re.MULTILINE)  # title and body
# Fenced code: not a sentence to quote (the sentence introducing it is dropped with it). It is
# replaced by a paragraph the sentence loop skips like a table row, which ends the introduction,
# so a list after the code is not taken for the introduction's items.
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_FENCE_MARK = "\n\n|\n\n"
# A paragraph set in bold as a whole ("**I get a hash error when I publish.**"): a FAQ prompt.
_BOLD_LINE = re.compile(r"^[ \t]*(\*\*|__)(?P<text>[^\n]+?)\1[ \t]*$", re.MULTILINE)
_MIN_WORDS = 3
_MAX_LIST_ITEMS = 8
_MAX_LIST_CHARS = 400
_MIN_STEPS = 2  # a list of one item is a sentence set as a bullet, not a procedure


@dataclass(frozen=True)
class Sentence:
    passage: int  # position in the list of passages drawn on (not a chunk ordinal)
    position: int
    text: str
    score: float
    similarity: float = 0.0  # cosine to the question (0 without sentence embeddings)
    prompt: bool = False  # a question or a bold FAQ prompt: what follows it answers, not itself
    kind: Kind = "sentence"  # or a procedure (an introduction with its list items), or a table row
    flagged: bool = False  # the injection guard flags it: never quoted

    @property
    def asks(self) -> bool:
        return self.prompt or self.text.endswith("?")


_SPACE_BEFORE_PUNCT = re.compile(r"(?<=\w) +([.,;:!?])(?=\s|$)")  # left where a removed image or link stood


def _flat(raw: str) -> str:
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(_BULLET.sub("", raw).split()))


def _table_row(match: re.Match[str]) -> str:
    """A markdown table row as a sentence ("Paste without formatting: Ctrl+Shift+V."); a separator row goes."""
    cells = [c.strip() for c in match.group(1).split("|")]
    cells = [c for c in cells if c]
    if not cells or all(set(c) <= set("-: ") for c in cells):
        return ""
    row = f"{cells[0]}: {', '.join(cells[1:])}" if len(cells) > 1 else cells[0]
    return f"{row}{_ROW_MARK}."


_ROW_MARK = "\u2063"  # invisible separator: survives plain text and splitting, so a row is known as one
# A sentence that opens by pointing back ("This icon ...", "It ...") needs the one before it.
_ANAPHORA = re.compile(r"^(?:this|that|these|those|it|its|they|their|such)\b", re.IGNORECASE)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.MULTILINE)
# "1. Open ..." would split into "1." and "Open ..." at the sentence boundary: a numbered item reads as a bullet.
_NUMBERED_ITEM = re.compile(r"^([ \t]*)\d+[.)][ \t]+", re.MULTILINE)


Kind = Literal["sentence", "procedure", "row"]


def _readable(content: str, *, lists: bool = False) -> str:
    """The passage's markdown without what is never quoted: quote markers, callout titles, headings,
    link-only lines and code (its place kept as a paragraph break); table rows as sentences. `lists`
    (for reading its lists): a callout, an aside, goes whole, and a heading ends a paragraph like code."""
    unquoted = _QUOTE_PREFIX.sub("", _CALLOUT.sub("", content) if lists else _CALLOUT_TITLE.sub("\n", content))
    heading = _FENCE_MARK if lists else ""
    cleaned = _LINK_ONLY.sub("", _HEADING_LINE.sub(heading, _PSEUDO_HEADING.sub(heading,
                                                                               _FENCE.sub(_FENCE_MARK, unquoted))))
    return _TABLE_ROW.sub(lambda m: "\n" + _table_row(m) + "\n", cleaned)


def passage_procedures(content: str) -> list[Procedure]:
    """The lists of a passage with their lead-ins, read from the same text its sentences are (a callout
    between two steps is left out, so the steps after it are still the same list's)."""
    return read_procedures(plain(_readable(content, lists=True)), lambda raw: _flat(raw).replace(_ROW_MARK, ""))


def _sentence_parts(content: str) -> list[tuple[str, Kind]]:
    """Readable sentences of a passage, each with its kind: a procedure is an introduction with its
    list items; a table row reads as "first cell: the others"."""
    out: list[tuple[str, Kind]] = []
    intro: str | None = None  # out[-1] before its list items, when it ends with ':'
    items: list[str] = []
    for raw in split_sentences(plain(_NUMBERED_ITEM.sub(r"\1- ", _readable(content)))):
        is_item = bool(_BULLET.match(raw))
        text = _flat(raw)
        if not text or text.startswith(("```", "|", "#")):
            intro = None
            continue
        if is_item and intro is not None:
            if len(items) < _MAX_LIST_ITEMS and sum(len(i) for i in items) + len(text) <= _MAX_LIST_CHARS:
                items.append(text.rstrip(";,. "))
                out[-1] = (f"{intro} {'; '.join(items)}.", "procedure")
            continue  # an item past the limit is not quoted on its own either
        intro, items = None, []
        if len(text.split()) < _MIN_WORDS:
            continue
        row = _ROW_MARK in text
        out.append((text.replace(_ROW_MARK, ""), "row" if row else "sentence"))
        if text.endswith(":"):
            intro = text
    return [(t, kind) for t, kind in out if not t.endswith(":")]  # an introduction whose list or code is not quoted


def _sentences(content: str) -> list[str]:
    """Readable sentences of a passage; list items follow the sentence that introduces them."""
    return [text for text, _ in _sentence_parts(content)]


def _prompts(content: str) -> set[str]:
    """The plain text of the passage's paragraphs set wholly in bold (FAQ prompts)."""
    return {_flat(plain(m.group("text"))) for m in _BOLD_LINE.finditer(content)}


def _stems(text: str) -> set[str]:
    return {stem(t) for t in tokenize(text)}


def term_weights(terms: Sequence[str], chunks: Sequence[Candidate]) -> dict[str, float]:
    """`log(1 + n / df)` per (stemmed) term over the passages; a term in none weighs as a term in one."""
    n = max(len(chunks), 1)
    docs = [_stems(plain(c.content)) | _stems(c.heading_path) for c in chunks]
    weights = {}
    for t in terms:
        df = sum(1 for d in docs if t in d)
        weights[t] = math.log(1 + n / max(df, 1))
    return weights


Similarity = Callable[[list[str]], Sequence[float]]


def note_title(chunk: Candidate) -> str:
    """The title of a passage's note as indexed (front matter, first H1), else its file name."""
    title = (chunk.metadata or {}).get("title")
    if not isinstance(title, str) or not title.strip():
        title = posixpath.splitext(posixpath.basename(chunk.source_path))[0]
    return title.strip()


def sentence_context(chunk: Candidate) -> str:
    """What a sentence is about when read alone: its note's title and section ("Obsidian Headless Install",
    "Cards view Settings > Image fit"); a section heading that repeats the title is not said twice.
    Masked like the passages: with a remote embedder it leaves the machine."""
    title = note_title(chunk)
    parts = heading_parts(chunk.heading_path)
    if parts and parts[0].casefold() == title.casefold():
        parts = parts[1:]
    return mask_secrets(f"{title} {' > '.join(parts)}".strip())


def _beside_title(weights: dict[str, float], chunk: Candidate) -> dict[str, float]:
    """The term weights a sentence of `chunk` is matched on: a term its note's title holds says which note,
    not which sentence of it, so it is left out (unless the title holds every term)."""
    titled = _stems(note_title(chunk))
    rest = {t: w for t, w in weights.items() if t not in titled}
    return rest if sum(rest.values()) > 0 else weights


def score_sentences(question: str, chunks: Sequence[Candidate], pool: Sequence[Candidate] | None = None, *,
                    similarity: Similarity | None = None, semantic_weight: float = 0.5,
                    with_context: bool = False) -> list[Sentence]:
    """`score_terms` for the question's own match terms."""
    return score_terms(match_terms(question), chunks, pool, similarity=similarity, semantic_weight=semantic_weight,
                       with_context=with_context)


def score_terms(terms: Sequence[str], chunks: Sequence[Candidate], pool: Sequence[Candidate] | None = None, *,
                similarity: Similarity | None = None, semantic_weight: float = 0.5,
                with_context: bool = False) -> list[Sentence]:
    """Every sentence of `chunks`, scored by the weighted share of the question's terms (`terms`, stems) it
    contains.

    Term weights come from `pool` (default: `chunks`), the passages the answer draws on; a sentence is
    matched on the terms its note's title does not hold (`_beside_title`). With
    `similarity` (texts -> cosine similarity of each to the question), the score blends
    `(1 - semantic_weight) * term share + semantic_weight * max(similarity, 0)`, so a sentence
    that answers in other words than the question's (a list of "file types" for "formats") counts.
    `with_context`: a sentence is embedded after its `sentence_context` ("Obsidian Headless Install:
    Obsidian Headless requires Node.js 22 or later."), since alone it often does not say what it is about; the term
    share still reads the sentence only.
    """
    weights = term_weights(list(terms), pool if pool is not None else chunks)
    own = [_beside_title(weights, c) for c in chunks]
    found = [(ci, pos, text, kind) for ci, c in enumerate(chunks)
             for pos, (text, kind) in enumerate(_sentence_parts(c.content))]
    prompts = [_prompts(c.content) for c in chunks]
    sims: Sequence[float] = [0.0] * len(found)
    if similarity is not None and found:
        contexts = [sentence_context(c) if with_context else "" for c in chunks]
        sims = similarity([f"{contexts[ci]}: {text}" if contexts[ci] else text for ci, _, text, _ in found])
    scored = []
    for (ci, pos, text, kind), sim in zip(found, sims, strict=True):
        words, matched = _stems(text), own[ci]
        total = sum(matched.values())
        share = sum(w for t, w in matched.items() if t in words) / total if total else 0.0
        if similarity is not None:
            share = (1 - semantic_weight) * share + semantic_weight * max(float(sim), 0.0)
        scored.append(Sentence(ci, pos, text, share, float(sim), prompt=text in prompts[ci], kind=kind,
                               flagged=bool(assess_injection(text).flags)))
    return scored


def favour_shape(sentences: Sequence[Sentence], shape: Shape | None, steps: bool, min_share_of_best: float) -> list[Sentence]:
    """Sentences holding a fact of the answer's shape (a duration for "how long", a key combination for
    "which key"; a procedure for a how-to question) outrank every other sentence, provided they score at
    least `min_share_of_best` of the best sentence: on the topic, and holding what was asked."""
    best = max((x.score for x in sentences), default=0.0)

    def fits(x: Sentence) -> bool:
        return not x.asks and ((shape is not None and shape.holds(x.text)) or (steps and x.kind == "procedure"))

    return [replace(x, score=best + x.score) if best > 0 and x.score >= best * min_share_of_best and fits(x) else x
            for x in sentences]


def favour_parts(sentences: Sequence[Sentence], by_part: Sequence[Sequence[Sentence]], floor: float) -> list[Sentence]:
    """A question that asks several things: after the best sentence come, in turn, the best sentence of
    the part the ones before cover least, so the quoted answer speaks to each part. `by_part[p]` holds
    the same sentences scored against part p alone. A part's best sentence scoring below `floor` is
    not brought forward (the notes may not answer that part)."""
    if len(by_part) < 2 or not sentences:
        return list(sentences)
    quotable = [i for i, x in enumerate(sentences) if not x.flagged and x.score > 0]
    if not quotable:
        return list(sentences)
    top = min(quotable, key=lambda i: (-sentences[i].score, sentences[i].passage, sentences[i].position))
    part_best = [max(part[i].score for i in quotable) for part in by_part]
    chosen = [top]
    for _ in range(len(by_part) - 1):
        covered = [max(part[i].score for i in chosen) / best if best > 0 else 1.0
                   for part, best in zip(by_part, part_best, strict=True)]
        weakest = min(range(len(by_part)), key=lambda p: covered[p])
        if covered[weakest] >= 1.0:  # every part already has its best sentence
            break
        pick = max((i for i in quotable if i not in chosen and not sentences[i].asks),
                   key=lambda i: by_part[weakest][i].score, default=None)
        if pick is None or by_part[weakest][pick].score < floor:
            break
        chosen.append(pick)
    ceiling = sentences[top].score
    out = list(sentences)
    for rank, i in enumerate(chosen[1:], start=1):  # right below the best, in the order chosen
        out[i] = replace(out[i], score=ceiling * (1 - 1e-9 * rank))
    return out


def weigh_by_passage(sentences: Sequence[Sentence], passage_scores: Sequence[float]) -> list[Sentence]:
    """Scale each sentence by its passage's score relative to the best passage: a weaker passage needs more."""
    if not passage_scores or passage_scores[0] <= 0:
        return list(sentences)
    return [replace(x, score=x.score * min(passage_scores[x.passage] / passage_scores[0], 1.0))
            for x in sentences]


def _quoted_spans(best: Sequence[Sentence], by_position: dict[tuple[int, int], Sentence], count: int,
                  short_words: int) -> list[list[Sentence]]:
    """Up to `count` sentences from `best` (best first), as runs of consecutive sentences.

    A question ("How do I ...?") or a FAQ prompt in bold answers nothing: what follows it in its
    passage is quoted in its place (whatever its form: a FAQ may answer with a question of its own).
    A sentence that opens by pointing back ("This icon is typically red.") comes after the one it
    points to. A sentence under `short_words` words rarely holds the whole answer ("Row height lets you display
    more information."), and one followed by a procedure ("To merge notes: open ...; select ...") is
    the how-to's preamble: the next sentence of its passage comes with it, when the count leaves room."""
    spans: list[list[Sentence]] = []
    taken: set[tuple[int, int]] = set()
    used = 0
    for x in best:
        if used >= count:
            break
        if (x.passage, x.position) in taken:
            continue
        if x.asks:
            start = by_position.get((x.passage, x.position + 1))
            if start is None or (start.passage, start.position) in taken:
                continue
        else:
            start = x
        run = [start]
        before = by_position.get((start.passage, start.position - 1))
        if (before is not None and start is x and _ANAPHORA.match(start.text) and used + 2 <= count
                and (before.passage, before.position) not in taken and not before.asks):
            run.insert(0, before)  # "This icon is typically red." says nothing without what "this" is
        after = by_position.get((start.passage, start.position + 1))
        if (len(run) == 1 and after is not None and (after.passage, after.position) not in taken and used + 2 <= count
                and ((start.kind == "sentence" and len(start.text.split()) < short_words)
                     or (start is not x and start.asks) or after.kind == "procedure")):
            run.append(after)
        taken.update((y.passage, y.position) for y in run)
        spans.append(run)
        used += len(run)
    return spans


def extractive_answer(sentences: Sequence[Sentence], chunks: Sequence[Candidate], *, count: int,
                      min_share_of_best: float, fallback_chars: int, short_words: int = 0,
                      steps: StepLimits | None = None) -> tuple[str, list[int]]:
    """The quoted answer (the best `count` sentences, in reading order, each run cited) and the indexes
    (into `chunks`) of the passages it quotes. `short_words`: see `_quoted_spans` (0: off). `steps` (a
    how-to question): when the best run comes from a list, that list is quoted whole (`_steps_of`)."""
    quotable = [x for x in sentences if not x.flagged]  # a flagged neighbour is not even pulled in
    best = sorted((x for x in quotable if x.score > 0), key=lambda x: (-x.score, x.passage, x.position))
    if best:
        cutoff = best[0].score * min_share_of_best
        best = [x for x in best if x.score >= cutoff - 1e-12]
    by_position = {(x.passage, x.position): x for x in quotable}
    spans = _quoted_spans(best, by_position, count, short_words)
    procedure = _steps_of(spans[0], chunks) if steps is not None and steps.max_items > 0 and spans else None
    if procedure is not None:  # its other sentences are in it already: the count goes to other sentences
        top = spans[0][0].passage
        best = [x for x in best if x in spans[0] or x.passage != top or not procedure.holds(x.text)]
        spans = _quoted_spans(best, by_position, count, short_words)
    if not spans and quotable:
        spans = [[min(quotable, key=lambda x: (x.passage, x.position))]]
    if not spans and not sentences and chunks:  # only headings or fragments: quote the top passage itself
        text = " ".join(plain(chunks[0].content).split())[:fallback_chars]
        spans = [[Sentence(0, 0, text, 0.0)]] if not assess_injection(text).flags else []
    first = spans[0] if spans else []
    spans.sort(key=lambda run: (run[0].passage, run[0].position))
    lines: list[str] = []
    for run in spans:
        cite = citation_for(chunks[run[0].passage])
        if procedure is None or steps is None or run[0].passage != first[0].passage:
            lines.append(f"{' '.join(x.text for x in run)} {cite}")
        else:  # the list's sentences in a later run of its passage were quoted with it
            lines += lines_with_steps([x.text for x in run], procedure, cite, steps,
                                      show=run is first)
    used: list[int] = []
    for run in spans:
        if run[0].passage not in used:
            used.append(run[0].passage)
    return "\n".join(lines), used


def _steps_of(run: Sequence[Sentence], chunks: Sequence[Candidate]) -> Procedure | None:
    """The list the best run of a how-to answer quotes from (one of its steps, or its lead-in with it),
    or None. A list with a lead-in or step the injection guard flags is not quoted whole."""
    for procedure in passage_procedures(chunks[run[0].passage].content):
        if len(procedure.steps) >= _MIN_STEPS and any(procedure.holds(x.text) for x in run):
            texts = [procedure.lead_in or "", *(step.text for step in procedure.steps)]
            return None if any(assess_injection(t).flags for t in texts if t) else procedure
    return None

