"""The notes seed's second stage: lexical rerank, blend with the vector score, floors, auto-K.

    lexical = min(max_lexical, matches / chunk_tokens * lexical_scale) + heading_bonus (if a term is in the heading)
    final   = (vector_weight * vector + lexical_weight * lexical) * folder_weight

`matches` counts every occurrence in the chunk of each distinct content term of the question
(stopwords and one-letter tokens dropped; phrasal verbs also as one word, "back up" -> "backup"),
compared as exact tokens; `chunk_tokens` is the chunk's token count (all tokens).
The folder position weight (1.0 for the first selected folder, then 0.9, ... never below 0.1)
multiplies the blend, so passages from folders ranked later need stronger evidence to pass the
final floor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag.errors import InputError
from rag.notes.settings import NotesSettings
from rag.text import STOPWORDS, content_terms, tokenize, unique
from rag.types import Candidate

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


def match_terms(question: str) -> list[str]:
    """The stems of `query_terms`: what answer sentences and snippets are matched against."""
    return unique(stem(t) for t in query_terms(question))


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


def lexical_score(terms: Sequence[str], content: str, heading_path: str, s: NotesSettings) -> float:
    """Exact tokens, not stems: on the Obsidian help vault, stemmed matching saturated the 0.4 cap
    for more passages and ranked the right note first less often (15 of 20 questions vs 17)."""
    tokens = tokenize(content)
    if not terms:
        return 0.0
    counts = Counter(tokens)
    matches = sum(counts[t] for t in terms)
    base = matches / len(tokens) * s.lexical_scale if tokens else 0.0
    base = min(max(base, 0.0), s.max_lexical)
    heading = set(tokenize(heading_path))
    bonus = s.heading_bonus if any(t in heading for t in terms) else 0.0
    return base + bonus


def blend(vector: float, lexical: float, folder_weight: float, s: NotesSettings) -> float:
    return (s.vector_weight * vector + s.lexical_weight * lexical) * folder_weight


def folder_weights(count: int, s: NotesSettings) -> list[float]:
    """Position weights of the selected folders: 1.0, 0.9, ... never below the minimum."""
    return [round(max(1.0 - i * s.folder_weight_step, s.folder_weight_min), 6) for i in range(count)]


@dataclass
class Scored:
    """One candidate with its notes scores; `dropped` says which floor removed it (None: kept)."""

    candidate: Candidate
    folder: str
    folder_weight: float
    vector: float
    lexical: float = 0.0
    final: float = 0.0
    dropped: str | None = None
    rank: int | None = None


def rerank(question: str, pool: Sequence[Scored], k: int, s: NotesSettings) -> list[Scored]:
    """Score every pooled candidate, apply both floors, rank the survivors; returns the top k.

    Every candidate in `pool` gets its scores, `dropped` reason or `rank` filled in (for debug).
    Order: final desc, vector desc, source_path asc, ordinal asc (deterministic).
    """
    terms = query_terms(question)
    for item in pool:
        c = item.candidate
        item.lexical = lexical_score(terms, c.content, c.heading_path, s)
        item.final = blend(item.vector, item.lexical, item.folder_weight, s)
        if item.vector < s.vector_floor:
            item.dropped = "below_vector_floor"
        elif item.final < s.final_floor:
            item.dropped = "below_final_floor"
    survivors = sorted((i for i in pool if i.dropped is None),
                       key=lambda i: (-i.final, -i.vector, i.candidate.source_path, i.candidate.ordinal))
    for n, item in enumerate(survivors):
        if n >= k:
            item.dropped = "beyond_k"
        else:
            item.rank = n + 1
    return survivors[:k]


@dataclass(frozen=True)
class KChoice:
    k: int
    reasons: tuple[str, ...]


def validate_detail(detail: str) -> str:
    if detail not in DETAILS:
        raise InputError(f"detail must be one of: {', '.join(DETAILS)} (got '{detail}')")
    return detail


def choose_k(question: str, *, detail: str, k: int | None, user_folders: bool, s: NotesSettings) -> KChoice:
    """How many passages to answer from: an explicit k clamped to [k_min, k_max], else automatic.

    Automatic: the detail hint (brief 3, normal 5, detailed 8), +2 for a broad question (more than
    20 words, two or more question marks, or a word such as "overview", "everything", "all",
    "compare"), -1 when the user named folders; clamped to [k_min, k_max].
    """
    validate_detail(detail)
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise InputError(f"k must be a whole number, got {k!r}")
        clamped = min(max(k, s.k_min), s.k_max)
        if clamped != k:
            return KChoice(clamped, (f"k={k} is outside {s.k_min}-{s.k_max}; clamped to {clamped}",))
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


def confidence(best_final: float | None, s: NotesSettings) -> str:
    """'filtered' (abstain), 'low' (answer cautiously) or 'normal', from the best final score."""
    if best_final is None or best_final < s.confidence_filter_below:
        return "filtered"
    if best_final < s.confidence_low_below:
        return "low"
    return "normal"
