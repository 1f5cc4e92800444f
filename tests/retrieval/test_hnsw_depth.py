"""HNSW built deeper and searched deeper as the index grows (db/sql/10_embedding_models.sql,
ragpg_hnsw_ef_search in db/sql/40_model_functions.sql).

A million-row table is out of reach here, so the larger sizes are the planner's estimate of the
table's rows (pg_class.reltuples, what the rule reads) set inside the test's transaction, which is
rolled back."""

from __future__ import annotations

import numpy as np
import pytest

from rag.retrieval import retrieve
from rag.store import models
from tests.retrieval.corpus import add_chunks, add_document, add_embeddings, add_vault, random_unit_vectors

DIMS = 8


@pytest.fixture
def model(conn):
    model = models.register_model(conn, "hash", "depth-test", DIMS)
    doc = add_document(conn, add_vault(conn, "depth"), "a.md")
    ids = add_chunks(conn, doc, [f"chunk {i}" for i in range(20)])
    add_embeddings(conn, model, zip(ids, random_unit_vectors(np.random.default_rng(3), len(ids), DIMS), strict=True))
    return model


def _estimate_rows(conn, table: str, rows: float) -> None:
    conn.execute("update pg_class set reltuples = %s where oid = to_regclass(quote_ident(%s))", (rows, table))


def _ef(conn, table: str, ef_search: int, match_count: int = 10) -> int:
    return conn.execute("select ragpg_hnsw_ef_search(%s, %s, %s) as ef",
                        (table, ef_search, match_count)).fetchone()["ef"]


def test_the_index_is_built_with_the_deeper_construction_search(conn, model):
    row = conn.execute("select reloptions from pg_class where oid = to_regclass(quote_ident(%s))",
                       (f"{model.embedding_table}_hnsw_idx",)).fetchone()
    assert conn.execute("select ragpg_hnsw_ef_construction() as v").fetchone()["v"] == 128
    assert "ef_construction=128" in row["reloptions"] and "m=16" in row["reloptions"]


@pytest.mark.parametrize(("rows", "ef_search", "expected"), [
    (20, 100, 100),              # a small table: the caller's ef_search
    (100_000, 100, 100),         # 80 per 100k rows stays under the caller's
    (500_000, 100, 400),
    (1_000_000, 100, 800),
    (1_000_000, 900, 900),       # never below the caller's
    (5_000_000, 100, 1000),      # pgvector's cap
    (-1, 40, 40),                # never analyzed (reltuples -1): the caller's
])
def test_ef_search_grows_with_the_estimated_rows(conn, model, rows, ef_search, expected):
    _estimate_rows(conn, model.embedding_table, rows)
    assert _ef(conn, model.embedding_table, ef_search) == expected


def test_match_count_above_the_depth_raises_it(conn, model):
    assert _ef(conn, model.embedding_table, 40, match_count=150) == 150


def test_an_unfiltered_search_of_a_large_index_runs_at_the_grown_ef_search(conn, model):
    query = random_unit_vectors(np.random.default_rng(9), 1, DIMS)[0]

    def ef_after_search() -> str:
        # the scores function sets hnsw.ef_search for the rest of the transaction (the match_*
        # wrappers restore it on return; the function is called here without one)
        conn.execute("select * from ragpg_vector_scores(%s, %s, %s, %s::vector, -1, 10, '{}'::jsonb, 10000, 100)",
                     (model.embedding_table, DIMS, model.model, str(list(map(float, query)))))
        return conn.execute("select current_setting('hnsw.ef_search') as v").fetchone()["v"]

    assert ef_after_search() == "100"
    _estimate_rows(conn, model.embedding_table, 1_000_000)
    assert ef_after_search() == "800"
    found = retrieve.match_vector(conn, model, query, match_count=5, similarity_threshold=-1)
    assert len(found) == 5  # the search itself still answers at the grown depth
