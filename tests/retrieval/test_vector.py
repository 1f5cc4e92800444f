"""match_native_chunks_<model>: ordering, thresholds, limits, bad input, filtered recall."""

from __future__ import annotations

import re

import numpy as np
import psycopg
import pytest
from psycopg import sql

from rag.errors import InputError
from rag.retrieval import retrieve
from rag.store import calls, models
from tests.retrieval.corpus import (
    add_chunks,
    add_document,
    add_embeddings,
    add_vault,
    cosine,
    random_unit_vectors,
    vector_text,
)

DIMS = 8


@pytest.fixture
def small(conn):
    """Two vaults, 12 chunks with random vectors, and two chunks sharing one vector (a tie)."""
    model = models.register_model(conn, "hash", "vector-test", DIMS)
    rng = np.random.default_rng(7)
    vectors = random_unit_vectors(rng, 12, DIMS)
    chunk_vectors: dict[int, np.ndarray] = {}
    for v, vault in enumerate(("one", "two")):
        vault_id = add_vault(conn, vault)
        for d in range(3):
            doc = add_document(conn, vault_id, f"folder{d}/doc{d}.md", metadata={"n": d})
            ids = add_chunks(conn, doc, [f"chunk {v}-{d}-0", f"chunk {v}-{d}-1"], metadata={"n": d})
            for i, chunk_id in enumerate(ids):
                chunk_vectors[chunk_id] = vectors[v * 6 + d * 2 + i]
    tie_doc_b = add_document(conn, add_vault(conn, "ties"), "b.md")
    tie_doc_a = conn.execute("insert into documents (vault_id, source_path, document_version, size_bytes)"
                             " select vault_id, 'a.md', 'v', 1 from documents where id = %s returning id",
                             (tie_doc_b,)).fetchone()["id"]
    tie = random_unit_vectors(rng, 1, DIMS)[0]
    for doc in (tie_doc_b, tie_doc_a):
        for chunk_id in add_chunks(conn, doc, ["tie 0", "tie 1"]):
            chunk_vectors[chunk_id] = tie
    add_embeddings(conn, model, chunk_vectors.items())
    return model, chunk_vectors, tie


def truth(chunk_vectors: dict[int, np.ndarray], query: np.ndarray) -> list[tuple[int, float]]:
    scored = [(cid, cosine(vec, query)) for cid, vec in chunk_vectors.items()]
    return sorted(scored, key=lambda x: -x[1])


def test_native_returns_nearest_chunks_by_cosine_similarity(conn, small):
    model, chunk_vectors, _ = small
    query = np.random.default_rng(1).standard_normal(DIMS).astype(np.float32)
    rows = retrieve.match_vector(conn, model, query, match_count=5, similarity_threshold=-1)
    ranked = truth(chunk_vectors, query)
    expected = ranked[:5]
    assert ranked[4][1] - ranked[5][1] > 1e-6  # no tie at the cut (ties are tested below)
    assert {r.chunk_id for r in rows} == {cid for cid, _ in expected}
    for row, (_, similarity) in zip(rows, expected, strict=True):
        assert row.similarity == pytest.approx(similarity, abs=1e-6)
    first = rows[0]
    assert isinstance(first, retrieve.VectorMatch) and first.metadata["vault"] == first.vault
    assert first.source_path.endswith(".md") and first.chunk_ordinal in (0, 1)
    # a plain Python list works as well as numpy
    again = retrieve.match_vector(conn, model, [float(x) for x in query], match_count=5, similarity_threshold=-1)
    assert [r.chunk_id for r in again] == [r.chunk_id for r in rows]


def test_ties_break_by_source_path_then_ordinal(conn, small):
    model, _, tie = small
    rows = retrieve.match_vector(conn, model, tie, match_count=4)
    assert [(r.source_path, r.chunk_ordinal) for r in rows] == [("a.md", 0), ("a.md", 1), ("b.md", 0), ("b.md", 1)]
    assert all(r.similarity == pytest.approx(1.0, abs=1e-6) for r in rows)


def test_similarity_threshold_and_match_count(conn, small):
    model, chunk_vectors, tie = small
    query = np.random.default_rng(2).standard_normal(DIMS).astype(np.float32)
    everything = retrieve.match_vector(conn, model, query, match_count=1000, similarity_threshold=-1)
    assert len(everything) == len(chunk_vectors)
    threshold = float(np.median([r.similarity for r in everything]))
    above = retrieve.match_vector(conn, model, query, match_count=1000, similarity_threshold=threshold)
    assert [r.chunk_id for r in above] == [r.chunk_id for r in everything if r.similarity >= threshold]
    assert len(retrieve.match_vector(conn, model, query, match_count=1, similarity_threshold=-1)) == 1
    assert len(retrieve.match_vector(conn, model, tie, match_count=10, similarity_threshold=0.999999)) == 4
    assert retrieve.match_vector(conn, model, -tie, match_count=10, similarity_threshold=1.0) == []


def test_empty_results(conn, small):
    model, _, tie = small
    assert retrieve.match_vector(conn, model, tie, filter={"n": 99}) == []
    assert retrieve.match_vector(conn, model, tie, filter={"nope": {"$exists": True}}) == []
    other = models.register_model(conn, "hash", "empty-model", DIMS)
    assert retrieve.match_vector(conn, other, tie) == []
    assert retrieve.match_folders(conn, other, tie) == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"query_embedding": [1.0, 2.0, 3.0]}, "query embedding has 3 dimensions, model hash/vector-test expects 8"),
    ({"query_embedding": [float("nan")] + [1.0] * 7}, "NaN or infinite"),
    ({"query_embedding": [float("inf")] + [1.0] * 7}, "NaN or infinite"),
    ({"query_embedding": [0.0] * 8}, "all zeros"),
    ({"query_embedding": None}, "missing"),
    ({"query_embedding": "[1,2,3]"}, "sequence of numbers"),
    ({"query_embedding": [["a"] * 8]}, "sequence of numbers"),
    ({"query_embedding": np.ones((2, 8))}, "one vector"),
    ({"match_count": 0}, "match_count must be between 1 and 1000, got 0"),
    ({"match_count": -5}, "match_count must be between 1 and 1000, got -5"),
    ({"match_count": 1001}, "match_count must be between 1 and 1000"),
    ({"match_count": 10**12}, "match_count must be between 1 and 1000"),
    ({"match_count": 2.5}, "match_count must be between 1 and 1000"),
    ({"similarity_threshold": 1.5}, "similarity_threshold must be between -1 and 1"),
    ({"similarity_threshold": -1.01}, "similarity_threshold must be between -1 and 1"),
    ({"similarity_threshold": float("nan")}, "similarity_threshold must be between -1 and 1"),
    ({"similarity_threshold": "high"}, "similarity_threshold must be a number"),
    ({"ef_search": 0}, "ef_search must be between 1 and 1000"),
    ({"exact_scan_max_rows": -1}, "exact_scan_max_rows must be >= 0"),
])
def test_bad_vector_input_is_one_clear_line_and_loses_nothing(conn, small, kwargs, message):
    model, chunk_vectors, tie = small
    before = conn.execute("select count(*) as n from chunks").fetchone()["n"]
    args = {"query_embedding": tie, **kwargs}
    with pytest.raises(InputError) as err:
        retrieve.match_vector(conn, model, args.pop("query_embedding"), **args)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert conn.execute("select count(*) as n from chunks").fetchone()["n"] == before
    assert len(retrieve.match_vector(conn, model, tie, match_count=3)) == 3


@pytest.mark.parametrize(("args", "sqlstate", "message"), [
    ("'[1,2,3]'::vector, 0, 10", "22023", "query embedding has 3 dimensions, model hash/vector-test expects 8"),
    ("'[0,0,0,0,0,0,0,0]'::vector, 0, 10", "22023", "query embedding is all zeros"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 0, 0", "22023", "match_count must be between 1 and 1000, got 0"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 0, -1", "22023", "match_count must be between 1 and 1000, got -1"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 0, 100000", "22023", "match_count must be between 1 and 1000"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 1.5, 10", "22023", "similarity_threshold must be between -1 and 1, got 1.5"),
    ("'[1,0,0,0,0,0,0,0]'::vector, -2, 10", "22023", "similarity_threshold must be between -1 and 1"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 'NaN', 10", "22023", "similarity_threshold must be between -1 and 1"),
    ("'[NaN,0,0,0,0,0,0,0]'::vector, 0, 10", "22000", "NaN not allowed in vector"),
    ("'[1,0,0,0,0,0,0,0]'::vector, 0, 10, '{{\"a\": {{\"$bad\": 1}}}}'", "22023", "invalid filter: unknown operator"),
])
def test_sql_level_errors_and_their_python_mapping(conn, small, args, sqlstate, message):
    model = small[0]
    with pytest.raises(psycopg.Error) as err, conn.transaction():
        conn.execute(sql.SQL("select * from {}(" + args + ")").format(sql.Identifier(model.match_function)))
    assert err.value.sqlstate == sqlstate and message in err.value.diag.message_primary
    mapped = calls.map_database_error(err.value)
    assert type(mapped) is InputError and message in str(mapped) and "\n" not in str(mapped)


def test_hnsw_settings_are_scoped_to_the_call(conn, small):
    model, chunk_vectors, tie = small
    conn.execute("set hnsw.ef_search = 17")
    rows = retrieve.match_vector(conn, model, tie, match_count=len(chunk_vectors), similarity_threshold=-1, ef_search=5)
    assert len(rows) == len(chunk_vectors)  # ef_search is raised to match_count
    assert conn.execute("show hnsw.ef_search").fetchone()["hnsw.ef_search"] == "17"
    assert conn.execute("show hnsw.iterative_scan").fetchone()["hnsw.iterative_scan"] == "off"


def test_match_functions_are_stable_with_pinned_search_path(conn, small):
    model = small[0]
    names = [model.match_function, model.langchain_function, model.hybrid_function, model.hybrid_multi_function,
             model.folders_function, "match_lexical_chunks"]
    rows = conn.execute("select proname, provolatile, proconfig from pg_proc"
                        " where pronamespace = 'public'::regnamespace and proname = any(%s)", (names,)).fetchall()
    assert sorted(r["proname"] for r in rows) == sorted(names)  # one overload each
    for r in rows:
        assert r["provolatile"] == "s", r["proname"]
        assert "search_path=public, pg_catalog, pg_temp" in r["proconfig"], r["proname"]
    native = next(r for r in rows if r["proname"] == model.match_function)
    assert "hnsw.iterative_scan=relaxed_order" in native["proconfig"]


def _auto_explain(conn) -> list[str] | None:
    """Plans of nested statements as notices, or None when auto_explain cannot be loaded here."""
    try:
        with conn.transaction():
            conn.execute("load 'auto_explain'")
    except psycopg.Error:
        return None
    conn.execute("set auto_explain.log_min_duration = 0")
    conn.execute("set auto_explain.log_nested_statements = on")
    conn.execute("set auto_explain.log_level = notice")
    conn.execute("set client_min_messages = notice")
    plans: list[str] = []
    conn.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
    return plans


def test_filtered_search_keeps_recall_where_hnsw_post_filtering_loses_it(conn):
    """3000 chunks, a filter matching 30 (1%): match_count results come back on both plans."""
    dims, n, every = 16, 3000, 100
    model = models.register_model(conn, "hash", "recall-test", dims)
    vault_id = add_vault(conn, "big")
    doc = add_document(conn, vault_id, "big.md")
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content, metadata)"
                 " select %s, %s, g, 'chunk ' || g,"
                 "        jsonb_build_object('group', case when g %% %s = 0 then 'rare' else 'common' end)"
                 " from generate_series(0, %s - 1) g", (doc, vault_id, every, n))
    ids = [r["id"] for r in conn.execute("select id from chunks where document_id = %s order by ordinal", (doc,))]
    rng = np.random.default_rng(3)
    vectors = random_unit_vectors(rng, n, dims)
    # bulk load then build the index, as a loader would (3000 one-by-one HNSW inserts are slow)
    index = sql.Identifier(f"{model.embedding_table}_hnsw_idx")
    conn.execute(sql.SQL("drop index {}").format(index))
    add_embeddings(conn, model, zip(ids, vectors, strict=True))
    conn.execute("select ragpg_create_hnsw_index(%s)", (model.embedding_table,))  # names each vault's graph
    conn.execute("analyze chunks")
    conn.execute(sql.SQL("analyze {}").format(sql.Identifier(model.embedding_table)))
    query = rng.standard_normal(dims).astype(np.float32)
    rare = {cid: vectors[i] for i, cid in enumerate(ids) if i % every == 0}
    expected = [cid for cid, _ in truth(rare, query)[:10]]

    # a selective filter (30 rows <= exact_scan_max_rows): exact scan over just those rows
    exact = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                  filter={"group": "rare"})
    assert [r.chunk_id for r in exact] == expected

    # forced onto the HNSW index: iterative scans still fill match_count. (The 1% filter raises
    # ef_search to 1000, at which the planner rightly prefers scanning 3000 rows exactly: seq scans
    # and sorts off keep the plan on the index, as on a large table.)
    plans = _auto_explain(conn)
    with conn.transaction():
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_sort = off")
        iterative = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                          filter={"group": {"$eq": "rare"}}, exact_scan_max_rows=0)
    assert len(iterative) == 10
    assert len({r.chunk_id for r in iterative} & set(expected)) >= 9
    sims = [r.similarity for r in iterative]
    assert sims == sorted(sims, reverse=True)
    if plans is not None:
        assert any(f"{model.embedding_table}_hnsw_idx" in p and "jsonb_path_match" in p for p in plans), plans
        plans.clear()

    # the same query with plain HNSW post-filtering (no iterative scan) returns fewer rows
    with conn.transaction():
        conn.execute("set local hnsw.iterative_scan = off")
        conn.execute("set local hnsw.ef_search = 40")
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_bitmapscan = off")
        conn.execute("set local enable_sort = off")
        plain = conn.execute(sql.SQL(
            "select e.chunk_id from {} e join chunks c on c.id = e.chunk_id"
            " where c.metadata @> '{{\"group\": \"rare\"}}' order by e.embedding <=> %s::vector limit 10").format(
                sql.Identifier(model.embedding_table)), (vector_text(query),)).fetchall()
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(sql.SQL(
            "explain select e.chunk_id from {} e join chunks c on c.id = e.chunk_id"
            " where c.metadata @> '{{\"group\": \"rare\"}}' order by e.embedding <=> %s::vector limit 10").format(
                sql.Identifier(model.embedding_table)), (vector_text(query),)).fetchall())
    assert f"{model.embedding_table}_hnsw_idx" in plan
    assert len(plain) < 10


def test_vault_restricted_search_uses_the_index_and_stays_in_its_vaults(conn):
    """Two vaults of 600 chunks: one vault (more than exact_scan_max_rows) is searched in its own
    partition (its id a value the planner sees, so the other is pruned); naming every vault is no filter."""
    dims, n = 16, 600
    model = models.register_model(conn, "hash", "vault-test", dims)
    rng = np.random.default_rng(11)
    vectors: dict[int, np.ndarray] = {}
    vault_of: dict[int, str] = {}
    for name in ("left", "right"):
        doc = add_document(conn, add_vault(conn, name, own_partition=True), f"{name}.md")
        ids = add_chunks(conn, doc, [f"{name} chunk {i}" for i in range(n)])
        for cid, vec in zip(ids, random_unit_vectors(rng, n, dims), strict=True):
            vectors[cid], vault_of[cid] = vec, name
    index = sql.Identifier(f"{model.embedding_table}_hnsw_idx")
    conn.execute(sql.SQL("drop index {}").format(index))
    add_embeddings(conn, model, vectors.items())
    conn.execute("select ragpg_create_hnsw_index(%s)", (model.embedding_table,))  # names each vault's graph
    conn.execute("analyze chunks")
    conn.execute(sql.SQL("analyze {}").format(sql.Identifier(model.embedding_table)))
    query = rng.standard_normal(dims).astype(np.float32)
    left_truth = [cid for cid, _ in truth({c: v for c, v in vectors.items() if vault_of[c] == "left"}, query)[:10]]

    plans = _auto_explain(conn)
    left = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                 filter={"vault": "left"}, exact_scan_max_rows=100)
    assert {vault_of[r.chunk_id] for r in left} == {"left"} and len(left) == 10
    assert len({r.chunk_id for r in left} & set(left_truth)) >= 9
    if plans is not None:  # the vault is a value the planner sees: only its partition's graph is read
        left_id, right_id = (conn.execute("select id from vaults where name = %s", (v,)).fetchone()["id"]
                             for v in ("left", "right"))
        searched = [p for p in plans if "embedding <=>" in p]
        # (600 vectors: a scan of the partition may beat its graph; either reads the left vault's rows only)
        assert any(re.search(rf"{model.embedding_table}(_hnsw_idx)?_p{left_id}\b", p) for p in searched), searched
        assert not any(re.search(rf"{model.embedding_table}(_hnsw_idx)?_p{right_id}\b", p) for p in searched), searched

    both = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                 filter={"vault": {"$in": ["left", "right"]}}, exact_scan_max_rows=100)
    unfiltered = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                       exact_scan_max_rows=100)
    assert [r.chunk_id for r in both] == [r.chunk_id for r in unfiltered]
