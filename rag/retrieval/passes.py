"""One retrieval pass: run the profile's SQL match function for one query or several and return Candidates.

A hybrid pass is one SQL call for any number of queries (`match_hybrid_multi`); vector, lexical and
hybrid passes all come back as `Candidate`s with the score fields their
function fills (`similarity`, `bm25_score`, `rrf_score` and component ranks), plus the chunk's
line/byte span and risk score fetched in one follow-up query by primary key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from psycopg import sql

from rag.config import RetrievalSettings
from rag.retrieval import retrieve
from rag.store import models
from rag.store.database import Connection
from rag.types import Candidate

#: The lowest cosine similarity: a pass keeps every candidate its lists hold.
ANY_SIMILARITY = -1.0


@dataclass(frozen=True)
class PassSpec:
    """What one pass searches with: the query text (lexical side) and/or an embedding (vector side)."""

    name: str
    text: str
    embedding: np.ndarray | None


def _candidate(row: Any, **extra: Any) -> Candidate:
    # No masking here: the indexer masked every stored field before writing it (rag/secrets.py).
    return Candidate(
        chunk_id=row.chunk_id, vault=row.vault, source_path=row.source_path, ordinal=row.chunk_ordinal,
        heading_path=row.heading_path, content=row.content, metadata=row.metadata, **extra)


def run_pass(conn: Connection, model: models.EmbeddingModelRef, specs: Sequence[PassSpec], *, retrieval: str,
             match_count: int, filter_: dict[str, Any], rrf_k: int, weights: dict[str, float],
             candidate_count: int, settings: RetrievalSettings) -> list[Candidate]:
    """One retrieval pass over one query or several (their variants, facets), fused by RRF in one SQL
    call; `settings` carries BM25 k1/b, ef_search and the exact-scan limit to SQL. No similarity
    threshold: ranking judges every candidate."""
    if retrieval == "lexical" or all(spec.embedding is None for spec in specs):
        lexical = retrieve.match_lexical(conn, " ".join(spec.text for spec in specs), match_count=match_count,
                                         filter=filter_, settings=settings)
        found = [_candidate(r, bm25_score=r.bm25_score, lexical_rank=i + 1) for i, r in enumerate(lexical)]
    elif retrieval == "vector" and len(specs) == 1:
        vector = retrieve.match_vector(conn, model, specs[0].embedding, match_count=match_count,
                                       similarity_threshold=ANY_SIMILARITY, filter=filter_, settings=settings)
        found = [_candidate(r, similarity=r.similarity, vector_rank=i + 1) for i, r in enumerate(vector)]
    else:
        hybrid = retrieve.match_hybrid_multi(
            conn, model, [spec.text for spec in specs], [spec.embedding for spec in specs], match_count=match_count,
            filter=filter_, similarity_threshold=ANY_SIMILARITY, rrf_k=rrf_k, weights=weights,
            candidate_count=candidate_count, settings=settings)
        found = [_candidate(r, similarity=r.similarity, bm25_score=r.bm25_score, rrf_score=r.rrf_score,
                            vector_rank=r.vector_rank, lexical_rank=r.lexical_rank) for r in hybrid]
    return attach_spans(conn, found)


def attach_spans(conn: Connection, candidates: list[Candidate]) -> list[Candidate]:
    if not candidates:
        return candidates
    rows = conn.execute(
        sql.SQL("select id, start_line, end_line, start_byte, end_byte, risk_score, risk_flags, token_count"
                " from chunks where id = any(%s)"), ([c.chunk_id for c in candidates],)).fetchall()
    by_id = {r["id"]: r for r in rows}
    out = []
    for c in candidates:
        r = by_id.get(c.chunk_id)
        if r is None:
            out.append(c)
            continue
        out.append(replace(c, start_line=r["start_line"], end_line=r["end_line"], start_byte=r["start_byte"],
                           end_byte=r["end_byte"], risk_score=float(r["risk_score"] or 0.0),
                           risk_flags=tuple(r["risk_flags"] or ()), token_count=r["token_count"]))
    return out


def fill_similarity(conn: Connection, model: models.EmbeddingModelRef, embedding: np.ndarray | None,
                    candidates: list[Candidate]) -> list[Candidate]:
    """The candidates with the cosine similarity filled in where no vector list gave one.

    A chunk found by the lexical leg alone has no similarity; ranking would count its meaning as 0
    and bury it. Its true cosine to the query is one primary-key lookup away, so ranking weighs
    every candidate on both its meaning and its words. `vector_rank` stays empty: which search
    found a chunk is not changed."""
    missing = [c.chunk_id for c in candidates if c.similarity is None]
    if embedding is None or not missing:
        return candidates
    sims = similarity_to(conn, model, embedding, missing)
    return [replace(c, similarity=sims[c.chunk_id]) if c.similarity is None and c.chunk_id in sims else c
            for c in candidates]


def similarity_to(conn: Connection, model: models.EmbeddingModelRef, embedding: np.ndarray,
                  chunk_ids: Sequence[int]) -> dict[int, float]:
    """Cosine similarity of the given chunks to one embedding (to compare passes on equal terms)."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        sql.SQL("select chunk_id, 1 - (embedding <=> %s) as similarity from {} where chunk_id = any(%s)").format(
            sql.Identifier(model.embedding_table)),
        (np.asarray(embedding, dtype=np.float32), list(chunk_ids))).fetchall()
    return {r["chunk_id"]: float(r["similarity"]) for r in rows}
