"""Calibrated abstention without an LLM: does the evidence found answer the question at all?

No single score separates answerable from unanswerable questions (an unanswerable near-miss often
gets a higher cosine than a paraphrased answerable one), so the decision combines signals that
generalise across questions (docs/architecture.md, "ask and search, step by step"):

* `top_final`            the best ranked passage's final score (rag.retrieval.rank)
* `margin`               how far it leads the best passage of another note
* `top_similarity`       the best cosine similarity among the top passages
* `sentence_similarity`  the best cosine of one *sentence* of the top passages to the question
* `term_coverage`        the rarity-weighted share of the question's words found in the top passages
* `unknown_share`        the rarity-weighted share of the question's words the vaults never use
* `leg_agreement`        the share of the top passages that both the vector and the BM25 leg found
* `passage_coverage`     the rarity-weighted share of the question's words found in one single passage
                         (the best one): an answer sits in one place, a near miss spreads its words
* `top_bm25`             the best BM25 score among the candidates, over `BM25_SCALE`
* `rarest_missing`       the rarity of the rarest question word missing from the top passages
                         (its idf over the largest idf possible; 0 when every word is there)
* `names_missing`        the share of the specific things the question names (YubiKey, Joplin, 500;
                         `rag.notes.question.specific_names`) that the top passages never mention:
                         a near miss asks about the one thing its page does not cover

    p(answerable) = 1 / (1 + exp(-(bias + Σ weight_i · signal_i)))     abstain when p < threshold

The weights, bias and threshold are settings (`NotesSettings.abstain_*`) fitted by logistic
regression on the golden set's dev split only (`python eval/fit_abstention.py`); the test split
reports how well they generalise.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass

from rag.retrieval.terms import TermStat
from rag.types import RankedChunk

SIGNALS: tuple[str, ...] = ("top_final", "margin", "top_similarity", "sentence_similarity", "term_coverage",
                            "unknown_share", "leg_agreement", "top_bm25", "rarest_missing", "passage_coverage",
                            "names_missing")
# The signals that read words, not cosines: a model fitted on them holds whatever embedder a vault uses.
PORTABLE_SIGNALS: tuple[str, ...] = ("term_coverage", "unknown_share", "top_bm25", "rarest_missing",
                                     "passage_coverage", "names_missing")
BM25_SCALE = 10.0  # BM25 is unbounded; this brings typical top scores of short questions near 1


@dataclass(frozen=True)
class AbstainSignals:
    top_final: float
    margin: float
    top_similarity: float
    sentence_similarity: float
    term_coverage: float
    unknown_share: float
    leg_agreement: float
    top_bm25: float = 0.0
    rarest_missing: float = 0.0
    passage_coverage: float = 0.0
    names_missing: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 6) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class AbstainDecision:
    abstain: bool
    probability: float  # p(answerable)
    threshold: float
    signals: AbstainSignals
    reason: str  # plain words, for --explain

    def debug(self) -> dict[str, object]:
        return {"abstain": self.abstain, "p_answerable": round(self.probability, 6), "threshold": self.threshold,
                "signals": self.signals.as_dict(), "reason": self.reason}


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


def names_missing(names: Sequence[str], passages: Sequence[str]) -> float:
    """The share of `names` that no passage mentions (case-insensitive); 0 when the question names none."""
    if not names:
        return 0.0
    text = " ".join(passages).casefold()
    return sum(1 for name in names if name.casefold() not in text) / len(names)


def collect_signals(ranked: Sequence[RankedChunk], stats: Sequence[TermStat], sentence_similarity: float, *,
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
        names_missing=names_missing(names, [f"{r.candidate.source_path} {r.candidate.heading_path} {r.candidate.content}"
                                            for r in top]))


def decide(signals: AbstainSignals, weights: Mapping[str, float], bias: float, threshold: float) -> AbstainDecision:
    values = asdict(signals)
    z = bias + sum(weights.get(name, 0.0) * values[name] for name in SIGNALS)
    p = 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))
    abstain = p < threshold
    return AbstainDecision(abstain, p, threshold, signals, _reason(signals, abstain, p, threshold))


# When `--explain` names a signal as a reason (wording only; the decision is the fitted model's).
EXPLAIN_UNKNOWN_SHARE_MIN = 0.3
EXPLAIN_COVERAGE_BELOW = 0.5
EXPLAIN_SENTENCE_SIMILARITY_BELOW = 0.45
EXPLAIN_NAMES_MISSING_MIN = 0.5


def _reason(s: AbstainSignals, abstain: bool, p: float, threshold: float) -> str:
    notes = []
    if s.unknown_share >= EXPLAIN_UNKNOWN_SHARE_MIN:
        notes.append(f"{s.unknown_share:.0%} of the question's distinctive words never appear in the notes")
    if s.term_coverage < EXPLAIN_COVERAGE_BELOW:
        notes.append(f"the best passages contain only {s.term_coverage:.0%} of the question's distinctive words")
    if s.sentence_similarity < EXPLAIN_SENTENCE_SIMILARITY_BELOW:
        notes.append("no sentence in the best passages is close in meaning to the question")
    if s.names_missing >= EXPLAIN_NAMES_MISSING_MIN:
        notes.append("the best passages never mention something the question names")
    if s.leg_agreement == 0:
        notes.append("word search and meaning search found different passages")
    verdict = (f"not answered: the evidence is too weak (confidence {p:.2f} < {threshold:.2f})" if abstain
               else f"answered: the evidence is strong enough (confidence {p:.2f} ≥ {threshold:.2f})")
    return verdict + (" — " + "; ".join(notes) if notes else "")
