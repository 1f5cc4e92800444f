"""Auto-RAG decisions: is the base retrieval weak, which mode runs, which result set wins.

The rules, in one place:
- `is_weak_retrieval` fires when the top similarity is below `similarity_threshold`, when fewer
  than `min_matches` results came back, or when the density is low: the share of results above
  the threshold is below `density_min_share`, or the top-k similarities are flat (max − min below
  `flat_spread_max`, i.e. nothing stands out). Each signal that fired is recorded.
- `score_decision` scores a result set by its top-k mean of `0.5·similarity to the original
  query + 0.5·share of the original query's content terms the chunk contains`. The corrected set
  wins only when it beats the base set by at least `decision_margin`; otherwise base wins. The
  rule is deliberately conservative: a correction must earn its place against the user's words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag.text import content_terms, unique
from rag.types import MODES


@dataclass(frozen=True)
class WeakCheck:
    weak: bool
    signals: tuple[str, ...]
    top_similarity: float | None
    count: int
    share_above_threshold: float | None
    spread: float | None


def is_weak_retrieval(similarities: Sequence[float | None], *, similarity_threshold: float, min_matches: int,
                      density_min_share: float, flat_spread_max: float, top_k: int) -> WeakCheck:
    sims = [s for s in similarities if s is not None]
    count = len(similarities)
    signals: list[str] = []
    top = max(sims) if sims else None
    share = spread = None
    if count < min_matches:
        signals.append("few_matches")
    if sims:
        if top is not None and top < similarity_threshold:
            signals.append("low_top_similarity")
        share = sum(1 for s in sims if s >= similarity_threshold) / len(sims)
        if share < density_min_share:
            signals.append("low_density")
        head = sorted(sims, reverse=True)[:top_k]
        spread = head[0] - head[-1]
        if len(head) >= min_matches and spread < flat_spread_max and top is not None and top < 2 * similarity_threshold:
            signals.append("flat_scores")
    return WeakCheck(bool(signals), tuple(signals), top, count, share, spread)


def resolve_auto_mode(mode: str, *, weak: bool | None, llm_available: bool, multi_query: bool) -> str:
    """The pass to run after the base pass. Forced modes route before (and without) the weak check."""
    if mode not in MODES:
        from rag.errors import InputError

        raise InputError(f"unknown mode '{mode}' (use one of: {', '.join(MODES)})")
    if mode != "auto":
        return mode
    if multi_query:
        return "multi"
    if not weak:
        return "base"
    return "correct" if llm_available else "prf"


@dataclass(frozen=True)
class SetScore:
    score: float
    mean_similarity: float
    mean_coverage: float
    count: int


def score_result_set(items: Sequence[tuple[float | None, str]], query: str, *, top_k: int) -> SetScore:
    """`items` are (similarity to the original query, chunk text) in rank order."""
    terms = set(content_terms(query))
    head = list(items)[:top_k]
    if not head:
        return SetScore(0.0, 0.0, 0.0, 0)
    sims = [s or 0.0 for s, _ in head]
    coverage = [len(terms & set(content_terms(text))) / len(terms) if terms else 0.0 for _, text in head]
    mean_sim = sum(sims) / len(head)
    mean_cov = sum(coverage) / len(head)
    return SetScore(0.5 * mean_sim + 0.5 * mean_cov, mean_sim, mean_cov, len(head))


@dataclass(frozen=True)
class Decision:
    winner: str
    reason: str
    base: SetScore
    corrected: SetScore | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def score_decision(base: SetScore, corrected: SetScore, *, corrected_name: str, margin: float) -> Decision:
    if corrected.count == 0:
        return Decision("base", f"{corrected_name} returned nothing", base, corrected)
    delta = corrected.score - base.score
    if delta >= margin:
        return Decision(corrected_name, f"{corrected_name} scored {corrected.score:.3f} vs base {base.score:.3f}"
                        f" (+{delta:.3f} ≥ margin {margin})", base, corrected)
    return Decision("base", f"base kept: {corrected_name} scored {corrected.score:.3f} vs base {base.score:.3f}"
                    f" (Δ {delta:+.3f} < margin {margin})", base, corrected)


def prf_expansion_terms(query: str, top_texts: Sequence[str], *, max_terms: int) -> list[str]:
    """Pseudo-relevance feedback: frequent content terms of the top results, weighted by rank."""
    query_terms = set(content_terms(query))
    weights: Counter[str] = Counter()
    for rank, text in enumerate(top_texts):
        for term, tf in Counter(content_terms(text, min_len=3)).items():
            if term not in query_terms and not term.isdigit():
                weights[term] += (1.0 / (rank + 1)) * (1 + tf) ** 0.5
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
    return unique(t for t, _ in ranked)[:max_terms]
