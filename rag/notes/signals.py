"""The signals of notes `ask`'s answer/abstain decision and the calibrated model over them.

No single score separates answerable from unanswerable questions (an unanswerable near-miss often
gets a higher cosine than a paraphrased answerable one), so the decision combines signals that
generalise across questions (docs/architecture.md, "ask and search, step by step"):

* `top_final`            the best ranked passage's final score (rag.retrieval.rank)
* `margin`               how far it leads the best passage of another note
* `top_similarity`       the best cosine similarity among the top passages
* `sentence_similarity`  the best cosine of one *sentence* of the top passages to the question (read
                         only when its weight is not 0 or the answer is quoted: None otherwise)
* `term_coverage`        the rarity-weighted share of the question's words found in the top passages
* `unknown_share`        the rarity-weighted share of the question's words the vaults never use
* `leg_agreement`        the share of the top passages that both the vector and the BM25 leg found
* `passage_coverage`     the rarity-weighted share of the question's words found in one single passage
                         (the best one): an answer sits in one place, a near miss spreads its words
* `top_bm25`             the best BM25 score among the candidates, over `BM25_SCALE`
* `rarest_missing`       the rarity of the rarest question word missing from the top passages
                         (its idf over the largest idf possible; 0 when every word is there)
* `names_missing`        the share of the specific things the question names (YubiKey, Joplin, 500;
                         `rag.notes.question.asked_names`) that the top passages never mention
                         (`missing_names`, the one rule of "a passage mentions a name", which the
                         decision's `names_missing` rule reads over more passages): a near miss asks
                         about the one thing its page does not cover

    p(answerable) = 1 / (1 + exp(-(bias + Σ weight_i · signal_i)))     abstain when p < threshold

The weights, bias and threshold are settings (`NotesSettings.abstain_*`, keys checked against
`SIGNALS` when the settings load) fitted by logistic regression on the golden set's dev split only
(`python eval/fit_abstention.py`); the test split reports how well they generalise. The rules and
the words that explain a decision are `rag.notes.decision`'s.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass

from rag.config_notes import ABSTAIN_SIGNALS
from rag.retrieval.terms import TermStat
from rag.text import stem, tokenize
from rag.types import RankedChunk

SIGNALS: tuple[str, ...] = ABSTAIN_SIGNALS  # the settings check the weights' keys against these names
# The signals that read words, not cosines: a model fitted on them holds whatever embedder a vault uses.
PORTABLE_SIGNALS: tuple[str, ...] = ("term_coverage", "unknown_share", "top_bm25", "rarest_missing",
                                     "passage_coverage", "names_missing")
BM25_SCALE = 10.0  # BM25 is unbounded; this brings typical top scores of short questions near 1
LOGIT_CLAMP = 60.0  # exp() of more overflows; p is 0 or 1 to double precision long before


@dataclass(frozen=True)
class AbstainSignals:
    top_final: float
    margin: float
    top_similarity: float
    sentence_similarity: float | None  # None: not read (weight 0 and an LLM answers)
    term_coverage: float
    unknown_share: float
    leg_agreement: float
    top_bm25: float = 0.0
    rarest_missing: float = 0.0
    passage_coverage: float = 0.0
    names_missing: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The signals read, rounded (one not read is left out)."""
        return {k: round(v, 6) for k, v in asdict(self).items() if v is not None}


def _idf(stat: TermStat) -> float:
    return math.log(1 + (stat.chunk_count + 1) / (stat.chunk_frequency + 1))


def term_signals(stats: Sequence[TermStat], chunk_ids: Collection[int]) -> tuple[float, float, float]:
    """(term_coverage, unknown_share, rarest_missing): rarity-weighted shares of the question's
    lexemes found in the given passages (`TermStat.in_chunks`: Postgres' own analysis of both) and
    unknown to the vaults, and the rarest one missing."""
    weights = {s.lexeme: _idf(s) for s in stats}
    total = sum(weights.values())
    if not total:
        return 0.0, 0.0, 0.0
    covered = {s.lexeme for s in stats if not set(chunk_ids).isdisjoint(s.in_chunks)}
    unknown = sum(weights[s.lexeme] for s in stats if s.chunk_frequency == 0)
    largest = max(math.log(1 + s.chunk_count + 1) for s in stats)
    rarest = max((w for lex, w in weights.items() if lex not in covered), default=0.0)
    return sum(weights[lex] for lex in covered) / total, unknown / total, rarest / largest if largest else 0.0


def _margin(ranked: Sequence[RankedChunk]) -> float:
    if not ranked:
        return 0.0
    top = ranked[0]
    other = next((r for r in ranked[1:] if r.candidate.source_path != top.candidate.source_path
                  or r.candidate.vault != top.candidate.vault), None)
    return top.scores.final - (other.scores.final if other else 0.0)


def passage_text(r: RankedChunk) -> str:
    """What a passage says about itself: its note's path, its headings, its text."""
    c = r.candidate
    return f"{c.source_path} {c.heading_path} {c.content}"


def missing_names(names: Sequence[str], passages: Sequence[str]) -> list[str]:
    """The names no passage mentions, as written (any case) or by the stems of their words ("PDFs" ~ "PDF").
    A name with a bare number among its words ("1.1", "Node 22") counts only as written: its numbers'
    tokens ("1", "22") are in most passages."""
    text = " ".join(passages)
    folded = text.casefold()
    stems = {stem(t) for t in tokenize(text)}

    def by_stems(name: str) -> bool:
        tokens = tokenize(name)
        return bool(tokens) and not any(t.isdigit() for t in tokens) and {stem(t) for t in tokens} <= stems

    return [n for n in names if n.casefold() not in folded and not by_stems(n)]


def collect_signals(ranked: Sequence[RankedChunk], stats: Sequence[TermStat], sentence_similarity: float | None, *,
                    top_passages: int, names: Sequence[str] = ()) -> AbstainSignals:
    top = list(ranked[:top_passages])
    sims = [r.candidate.similarity for r in top if r.candidate.similarity is not None]
    both = [r for r in top if r.candidate.vector_rank is not None and r.candidate.lexical_rank is not None]
    coverage, unknown, rarest = term_signals(stats, [r.candidate.chunk_id for r in top])
    single = max((term_signals(stats, [r.candidate.chunk_id])[0] for r in top), default=0.0)
    bm25 = max((r.candidate.bm25_score for r in ranked if r.candidate.bm25_score is not None), default=0.0)
    return AbstainSignals(
        top_final=top[0].scores.final if top else 0.0, margin=_margin(ranked),
        top_similarity=max(sims, default=0.0), sentence_similarity=sentence_similarity,
        term_coverage=coverage, unknown_share=unknown, leg_agreement=len(both) / len(top) if top else 0.0,
        top_bm25=bm25 / BM25_SCALE, rarest_missing=rarest, passage_coverage=single,
        names_missing=len(missing_names(names, [passage_text(r) for r in top])) / len(names) if names else 0.0)


def p_answerable(signals: AbstainSignals, weights: Mapping[str, float], bias: float) -> float:
    """The model's p(answerable): the logistic of bias + the weighted signals (a signal not read counts 0)."""
    values = asdict(signals)
    z = bias + sum(weights.get(name, 0.0) * (values[name] or 0.0) for name in SIGNALS)
    return 1.0 / (1.0 + math.exp(-max(min(z, LOGIT_CLAMP), -LOGIT_CLAMP)))
