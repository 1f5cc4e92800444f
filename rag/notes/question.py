"""The question's side of notes answering: its content terms, the detail hint and K (passages drawn on).

`read_question` reads a question once into a `Question` (its terms, the names it asks about, its
parts, the shape of the answer it asks for), which the later steps of `ask` read by field.
`query_terms` are the distinct content terms of a question (stopwords and one-letter tokens
dropped; phrasal verbs also as one word, "back up" -> "backup"); `match_terms` their stems (`rag.text.stem`),
what answer sentences and snippets are matched against. `folder_weights` are the folder prior's
position weights (1.0, 0.9, ... never below the minimum). `specific_names` are the names and
numbers a question mentions, which an answer has to mention too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.config import NotesSettings
from rag.errors import InputError
from rag.notes.shapes import Shape, answer_shape, asks_for_steps
from rag.text import STOPWORDS, content_terms, tokenize, unique
from rag.text import stem as stem  # where the notes' modules have found it

DETAILS: tuple[str, ...] = ("brief", "normal", "detailed")


PARTICLES = frozenset({"up", "down", "in", "out", "on", "off", "over"})


def query_terms(question: str) -> list[str]:
    """The distinct content terms of a question, in order of appearance, plus the one-word form of
    each phrasal verb in it ("back up" -> "backup", "log in" -> "login"), which notes often use."""
    terms = content_terms(question)
    tokens = tokenize(question)
    compounds = [a + b for a, b in zip(tokens, tokens[1:], strict=False)
                 if b in PARTICLES and a not in STOPWORDS and len(a) > 1]
    return unique([*terms, *compounds])


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+.'-]*")
_SENTENCE_ENDS = ".?!:"


def specific_names(question: str) -> list[str]:
    """The specific things a question names: capitalised words inside a sentence (YubiKey, Joplin,
    Chrome, iCloud) and words with digits (500, libnss3.so, 2FA), without possessive 's. A question
    typed in lower case names none, and the signal built on this stays silent."""
    names: list[str] = []
    for m in _WORD.finditer(question):
        word = m.group().strip(".'-").removesuffix("'s")
        before = question[:m.start()].rstrip()
        starts_sentence = not before or before[-1] in _SENTENCE_ENDS
        if not word or "'" in word or word.lower() in STOPWORDS:
            continue
        if any(ch.isdigit() for ch in word) or (not starts_sentence and any(ch.isupper() for ch in word)):
            names.append(word)
    return unique(names)


# A name after "on", "in", ... says where the reader is ("on my PC", "located in Europe", "on a German
# keyboard"), not what they ask about: notes about the thing rarely repeat the reader's setting.
_SETTING = re.compile(r"\b(?:on|in|at|under|within|inside)\s+(?:(?:a|an|the|my|our|your|their|this|that)\s+)?"
                      r"(?:\w+\s+)?$", re.IGNORECASE)


def asked_names(question: str) -> list[str]:
    """`specific_names` without the ones that only set the scene (a name right after "on", "in", "at",
    "under", "within", "inside", with at most a determiner and one word between): what the answer
    has to mention."""
    asked = []
    for name in specific_names(question):
        at = re.search(rf"(?<![\w-]){re.escape(name)}", question)
        if at is None or not _SETTING.search(question[:at.start()]):
            asked.append(name)
    return asked


# Where a question starts asking a second thing: after a question mark, at ", and ..." and at "and"
# before a question word ("..., and what do I do if I lose my phone?", "What is it and can I ...").
_PART_BREAK = re.compile(r"\?\s+(?=\S)|,\s+and\s+(?:then\s+)?|\s+and\s+(?=(?:what|how|which|where|when|why|who|"
                         r"can|could|is|are|do|does|did|will|would|should|may)\b)", re.IGNORECASE)


def question_parts(question: str, min_terms: int) -> list[str]:
    """The parts of a question that asks several things ("How do I turn on 2FA, and what if I lose my
    phone?" -> two). A part with fewer than `min_terms` content terms ("What runtime, and which
    version ...") is read with the next one (the last with the one before), in the question's own
    words. One part: a simple question."""
    breaks = [(m.start(), m.end()) for m in _PART_BREAK.finditer(question)]
    spans = list(zip([0] + [end for _, end in breaks], [start for start, _ in breaks] + [len(question)], strict=True))
    merged: list[tuple[int, int]] = []
    start: int | None = None
    for begin, end in spans:
        start = begin if start is None else start
        if len(query_terms(question[start:end])) >= min_terms:
            merged.append((start, end))
            start = None
    if start is not None:
        merged = [*merged[:-1], (merged[-1][0], len(question))] if merged else [(start, len(question))]
    return [question[a:b].strip() for a, b in merged]


def match_terms(question: str) -> list[str]:
    """The stems of `query_terms`: what answer sentences and snippets are matched against."""
    return unique(stem(t) for t in query_terms(question))


def folder_weights(count: int, s: NotesSettings) -> list[float]:
    """Position weights of the selected folders: 1.0, 0.9, ... never below the minimum."""
    return [round(max(1.0 - i * s.folder_weight_step, s.folder_weight_min), 6) for i in range(count)]


@dataclass(frozen=True)
class KChoice:
    k: int
    reasons: tuple[str, ...]


def validate_detail(detail: str) -> str:
    if detail not in DETAILS:
        raise InputError(f"detail must be one of: {', '.join(DETAILS)} (got '{detail}')")
    return detail


def choose_k(question: str, *, detail: str, k: int | None, user_folders: bool, s: NotesSettings) -> KChoice:
    """How many passages to answer from: an explicit k in [k_min, k_max] (else an InputError naming the
    range), or automatic.

    Automatic: the detail hint (brief 3, normal 5, detailed 8), +2 for a broad question (more than
    20 words, two or more question marks, or a word such as "overview", "everything", "all",
    "compare"), -1 when the user named folders; clamped to [k_min, k_max].
    """
    validate_detail(detail)
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise InputError(f"k must be a whole number, got {k!r}")
        if not s.k_min <= k <= s.k_max:
            raise InputError(f"k must be between {s.k_min} and {s.k_max}, got {k}")
        return KChoice(k, ("explicit k",))
    value = {"brief": s.k_brief, "normal": s.k_normal, "detailed": s.k_detailed}[detail]
    reasons = [f"detail '{detail}': {value}"]
    broad = []
    words = question.split()
    if len(words) > s.breadth_min_words:
        broad.append(f"{len(words)} words")
    if question.count("?") >= s.breadth_min_question_marks:
        broad.append(f"{question.count('?')} question marks")
    hits = sorted(set(tokenize(question)) & set(s.breadth_words))
    if hits:
        broad.append("asks for " + ", ".join(f"'{h}'" for h in hits))
    if broad:
        value += s.breadth_bonus
        reasons.append(f"broad question ({'; '.join(broad)}): {s.breadth_bonus:+d}")
    if user_folders:
        value += s.folder_filter_k_delta
        reasons.append(f"folders named: {s.folder_filter_k_delta:+d}")
    clamped = min(max(value, s.k_min), s.k_max)
    if clamped != value:
        reasons.append(f"clamped {value} to {clamped}")
    return KChoice(clamped, tuple(reasons))


@dataclass(frozen=True)
class QuestionPart:
    """One thing a question asks, in its own words, and the stems its answer sentences are matched on."""

    text: str
    match_terms: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    """A question as `ask` reads it, once: everything later steps need to know about its words."""

    text: str
    terms: tuple[str, ...]  # query_terms: content terms, phrasal verbs joined
    match_terms: tuple[str, ...]  # their stems: what sentences and snippets are matched on
    names: tuple[str, ...]  # asked_names: what the answer has to mention
    parts: tuple[QuestionPart, ...]  # question_parts: one for a simple question
    shape: Shape | None  # answer_shape: the form of fact its answer holds
    wants_steps: bool  # asks_for_steps: a how-to question, answered by a procedure
    k: KChoice  # choose_k: how many passages the answer draws on, and why


def read_question(text: str, s: NotesSettings, *, detail: str = "normal", k: int | None = None,
                  user_folders: bool = False) -> Question:
    """The question read once: its words, names, parts and shape, and K for `detail`, an explicit `k`
    and whether the user named folders (`choose_k`; an InputError for a bad detail or k)."""
    return Question(
        text=text, terms=tuple(query_terms(text)), match_terms=tuple(match_terms(text)), names=tuple(asked_names(text)),
        parts=tuple(QuestionPart(p, tuple(match_terms(p))) for p in question_parts(text, s.question_part_min_terms)),
        shape=answer_shape(text), wants_steps=asks_for_steps(text),
        k=choose_k(text, detail=detail, k=k, user_folders=user_folders, s=s))
