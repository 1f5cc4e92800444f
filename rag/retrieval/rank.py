"""Ranking: one final score per candidate, a per-source cap and a deterministic order.

The rule (every number comes from the `Profile`):

    vector    = clamp(similarity, 0, 1)                   cosine is already on an absolute scale
    lexical   = bm25 / max(bm25 in this list)             BM25 is unbounded; the best match gets 1
    freshness = 0.5 ** (age_days / half_life_days)        from metadata `date`; unknown → 0.5
    boost     = metadata_boost[doc_type] (else 0)
    fused     = w_cosine·vector + w_bm25·lexical + w_freshness·freshness + w_metadata·boost
    penalty   = risk_penalty · clamp(risk_score, 0, 1)
    final     = fused · type_weight[doc_type] · persona_weight[persona] · (1 − penalty)

A missing component (no similarity from a lexical pass, no bm25 from a vector pass) counts 0
and is reported as None. Duplicate candidates (same vault/source_path#ordinal, e.g. found by
two passes) keep their best score. Then at most `per_source_cap` chunks per document
(vault, source_path) are kept — the best ones — and the order is final desc, source_path asc,
ordinal asc (vault asc, then chunk id, as last tie-breakers so the order is total).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from rag.config_profiles import Profile
from rag.types import Candidate, RankedChunk, ScoreBreakdown

FRESHNESS_UNKNOWN = 0.5  # neither rewards nor punishes a chunk whose document has no date
SECONDS_PER_DAY = 86400.0
DATE_KEY = "date"
DOC_TYPE_KEY = "doc_type"
PERSONA_KEY = "persona"
NEUTRAL_MULTIPLIER = 1.0


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def parse_date(value: Any) -> datetime | None:
    """ISO date/datetime strings and date objects; naive values are taken as UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def freshness(metadata: Mapping[str, Any], half_life_days: float, now: datetime) -> float:
    """Exponential decay with the profile's half-life; future dates count as fresh (1.0)."""
    when = parse_date(metadata.get(DATE_KEY))
    if when is None:
        return FRESHNESS_UNKNOWN
    age_days = max(0.0, (now - when).total_seconds() / SECONDS_PER_DAY)
    decay: float = 0.5 ** (age_days / half_life_days)  # typeshed: float ** float may be complex
    return decay


def _key(metadata: Mapping[str, Any], name: str) -> str | None:
    value = metadata.get(name)
    return str(value).strip().lower() if value not in (None, "") else None


def type_weight(metadata: Mapping[str, Any], profile: Profile) -> float:
    doc_type = _key(metadata, DOC_TYPE_KEY)
    if doc_type is None:
        return profile.unknown_type_weight
    return profile.type_weights.get(doc_type, profile.unknown_type_weight)


def persona_weight(metadata: Mapping[str, Any], profile: Profile) -> float:
    persona = _key(metadata, PERSONA_KEY)
    return profile.persona_weights.get(persona, NEUTRAL_MULTIPLIER) if persona else NEUTRAL_MULTIPLIER


def metadata_boost(metadata: Mapping[str, Any], profile: Profile) -> float:
    doc_type = _key(metadata, DOC_TYPE_KEY)
    return profile.metadata_boost.get(doc_type, 0.0) if doc_type else 0.0


def score(candidate: Candidate, profile: Profile, *, max_bm25: float, now: datetime) -> ScoreBreakdown:
    meta = candidate.metadata or {}
    vector = _clamp01(candidate.similarity) if candidate.similarity is not None else None
    lexical = None
    if candidate.bm25_score is not None:
        lexical = _clamp01(candidate.bm25_score / max_bm25) if max_bm25 > 0 else 0.0
    fresh = freshness(meta, profile.freshness_half_life_days, now)
    boost = metadata_boost(meta, profile)
    fused = (profile.w_cosine * (vector or 0.0) + profile.w_bm25 * (lexical or 0.0)
             + profile.w_freshness * fresh + profile.w_metadata * boost)
    doc_mult, persona_mult = type_weight(meta, profile), persona_weight(meta, profile)
    penalty = profile.risk_penalty * _clamp01(candidate.risk_score)
    final = fused * doc_mult * persona_mult * (1.0 - penalty)
    weights = {"doc_type": doc_mult, "persona": persona_mult, "freshness": fresh, "metadata": boost}
    return ScoreBreakdown(vector=vector, lexical=lexical, fused=fused, weights_applied=weights,
                          penalty=penalty, final=final)


def _with_prior(s: ScoreBreakdown, multiplier: float) -> ScoreBreakdown:
    return replace(s, final=s.final * multiplier, weights_applied={**s.weights_applied, "prior": multiplier})


def _order(item: tuple[Candidate, ScoreBreakdown]) -> tuple[float, str, int, str, int]:
    c, s = item
    return (-s.final, c.source_path, c.ordinal, c.vault, c.chunk_id)


def _best_per_chunk(scored: list[tuple[Candidate, ScoreBreakdown]]) -> list[tuple[Candidate, ScoreBreakdown]]:
    best: dict[str, tuple[Candidate, ScoreBreakdown]] = {}
    for item in sorted(scored, key=_order):
        best.setdefault(item[0].ref, item)
    return sorted(best.values(), key=_order)


def _cap_per_source(ordered: list[tuple[Candidate, ScoreBreakdown]], cap: int) -> list[tuple[Candidate, ScoreBreakdown]]:
    kept: list[tuple[Candidate, ScoreBreakdown]] = []
    per_source: dict[tuple[str, str], int] = {}
    for item in ordered:
        source = (item[0].vault, item[0].source_path)
        if per_source.get(source, 0) < cap:
            per_source[source] = per_source.get(source, 0) + 1
            kept.append(item)
    return kept


def _with_note(s: ScoreBreakdown, bonus: float) -> ScoreBreakdown:
    return replace(s, final=s.final + bonus, weights_applied={**s.weights_applied, "note": bonus})


def rank_candidates(candidates: Sequence[Candidate], profile: Profile, *, now: datetime | None = None,
                    prior: Callable[[Candidate], float] | None = None,
                    note_signals: Mapping[tuple[str, str], float] | None = None) -> list[RankedChunk]:
    """Score, deduplicate, cap per source and order; ranks start at 1.

    `prior` (a caller's multiplier per candidate, e.g. the notes folder prior) scales `final` and is
    recorded in `weights_applied["prior"]`; it moves a candidate, it never removes one. `note_signals`
    ((vault, source_path) → 0..1, rag.retrieval.note_signal) then add `w_note · best final · signal`
    to each passage of the note, recorded in `weights_applied["note"]`."""
    now = now or datetime.now(UTC)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    max_bm25 = max((c.bm25_score for c in candidates if c.bm25_score is not None), default=0.0)
    scored = [(c, score(c, profile, max_bm25=max_bm25, now=now)) for c in candidates]
    if prior is not None:
        scored = [(c, _with_prior(s, prior(c))) for c, s in scored]
    if note_signals and profile.w_note > 0:
        best = max((s.final for _, s in scored), default=0.0)
        scored = [(c, _with_note(s, profile.w_note * best * note_signals.get((c.vault, c.source_path), 0.0)))
                  for c, s in scored]
    kept = _cap_per_source(_best_per_chunk(scored), profile.per_source_cap)
    return [RankedChunk(candidate=c, scores=s, rank=i) for i, (c, s) in enumerate(kept, start=1)]
