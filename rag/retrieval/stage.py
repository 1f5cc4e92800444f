"""The retrieve stage: embed → base pass (SQL `match_*`) → `is_weak_retrieval` → route → corrections.

One function, `retrieve_stage`, serves `compute_context`, notes `ask` / `search` and the HTTP routes,
so every entry point sees the same candidates for the same question, profile and filter
(docs/architecture.md, "compute_context, step by step"). The decision path is recorded on a `RetrievalRun`, which
becomes the `decision` of a result. Each pass is a `rag_retrieval_stage` span.

A profile with `facet_split` searches a question that joins topics ("… and …", "compare X with Y",
"… then …") as the whole question plus each facet, fused by RRF in one SQL call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.arguments import query_text
from rag.config_profiles import Profile
from rag.errors import DatabaseError, NotFoundError
from rag.retrieval import autorag
from rag.retrieval.filters import filter_json
from rag.retrieval.passes import fill_similarity
from rag.retrieval.query_log import log_retrieval, record_query
from rag.retrieval.routes import ROUTES
from rag.retrieval.run import PassContext, RetrievalRun
from rag.store import lexical_backend, models, row_security
from rag.types import Candidate

if TYPE_CHECKING:  # the runtime is handed in by the entry point (rag.runtime)
    from rag.runtime import Runtime


@dataclass(frozen=True)
class Retrieval:
    """What the retrieve stage hands to ranking: the candidates and how they were found."""

    candidates: list[Candidate]
    run: RetrievalRun
    model: models.EmbeddingModelRef
    query_embedding: np.ndarray | None


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def indexed_model(conn: Any, rt: Runtime) -> models.EmbeddingModelRef:
    """The configured embedding model's registration; it exists once something was indexed with it."""
    model = models.get_model(conn, rt.embedder.provider, rt.embedder.model)
    if model is None:
        raise NotFoundError(f"nothing is indexed with the embedding model {rt.embedder.provider}/"
                            f"{rt.embedder.model} yet: run `ragpg index`")
    return model


def retrieve_stage(conn: Any, rt: Runtime, prof: Profile, query: str, filter_: dict[str, Any], *,
                   mode: str = "auto", model: models.EmbeddingModelRef | None = None,
                   query_embedding: np.ndarray | None = None) -> Retrieval:
    """Candidates for `query` under `filter_`, by the profile's retrieval and the mode's route.

    `query_embedding` may be passed when the caller already embedded the query (it is the same
    embedding the stage would make)."""
    run = RetrievalRun(mode=mode)
    model = model or indexed_model(conn, rt)
    started = time.perf_counter()
    if prof.retrieval == "lexical":
        query_embedding = None
    elif query_embedding is None:
        query_embedding = rt.embedder.embed_query(query)
    run.timings_ms["embed_ms"] = ms_since(started)
    if prof.retrieval != "vector":
        s = rt.settings.retrieval
        # (a lexical pass is its own list: match_count long)
        candidate_count = prof.match_count if prof.retrieval == "lexical" else prof.candidates
        run.lexical_backend = lexical_backend.backend_for_search(conn, None, filter_json(filter_), s.bm25_k1, s.bm25_b,
                                                                 candidate_count, query)
    ctx = PassContext(conn, rt, prof, model, filter_, query, query_embedding)
    candidates = _decide(ctx, run, started)
    if prof.retrieval == "hybrid" and prof.fill_similarity:  # after the decision: the weak check judged what the legs found
        fill_started = time.perf_counter()
        candidates = fill_similarity(conn, model, query_embedding, candidates)
        run.timings_ms["fill_similarity_ms"] = ms_since(fill_started)
    s = rt.settings.retrieval
    if s.query_log:  # the SQL console's query-embedding cache and most-retrieved notes, written in the background
        log_retrieval(rt, model.id, query, query_embedding, candidates, s.query_log_top)
    return Retrieval(candidates, run, model, query_embedding)


def _decide(ctx: PassContext, run: RetrievalRun, started: float) -> list[Candidate]:
    prof = ctx.prof
    forced = run.mode != "auto"
    base: list[Candidate] = []
    if not forced or run.mode == "base":
        base = ctx.base(run)
        run.timings_ms["base_pass_ms"] = ms_since(started)
        run.weak = autorag.is_weak_retrieval(
            [c.similarity for c in base] if prof.retrieval != "lexical" else [1.0] * len(base),
            similarity_threshold=prof.similarity_threshold, min_matches=prof.min_matches,
            density_min_share=prof.density_min_share, flat_spread_max=prof.flat_spread_max, top_k=prof.match_count)
    run.route = autorag.resolve_auto_mode(run.mode, weak=run.weak.weak if run.weak else None,
                                          llm_available=ctx.rt.llm is not None, multi_query=prof.multi_query)
    if run.route == "base":
        run.reason = "retrieval was strong" if run.mode == "auto" else "base mode forced"
        return base
    if forced:
        base = base or ctx.base(run)
    return ROUTES[run.route](ctx, run, base)


def embed_and_cache(rt: Runtime, text: str, *, role: str | None = None) -> tuple[models.EmbeddingModelRef, np.ndarray]:
    """`ragpg embed`: the configured model's embedding of `text`, cached for the console: for the
    owner, or for the console role `role` (only that role and the owner read it).
    Returns (the model's registration, the embedding)."""
    query = query_text(text if isinstance(text, str) else "", rt.settings.retrieval.max_query_chars, "text to embed")
    with rt.connection(autocommit=True) as conn:
        if role is not None:
            known = row_security.console_roles(conn)
            if role not in known:
                raise NotFoundError(f"unknown console role {role!r} (`ragpg db console` makes them; known: "
                                    f"{', '.join(known) or 'none'})")
        model = indexed_model(conn, rt)
        embedding = rt.embedder.embed_query(query)
        if not record_query(conn, model.id, query, embedding, cached_by=role):
            raise DatabaseError("the embedding could not be cached (see the warning above)")
    return model, embedding
