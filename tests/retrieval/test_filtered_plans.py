"""Filtered vector search planned by the filter's selectivity (db/sql/40_model_functions.sql):
exact over few matching rows, HNSW sized to the filter over many, the full k either way, and a
folder prefix found through chunks_folder_idx (db/sql/30_filters.sql)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from rag.retrieval import retrieve
from rag.store import models
from rag.store.database import open_connection
from tests.retrieval.corpus import add_embeddings, add_vault, random_unit_vectors

DIMS, DOCS, PER_DOC = 64, 100, 60  # 6000 chunks; folders area<a>/topic<t> hold 10% (a) and 1% (a, t)
SELECTIVE = {"tags": ["rare"]}  # 1%: 60 chunks, under exact_scan_max_rows
BROAD = {"folder": {"$prefix": "area3/"}}  # 10%: 600 chunks
BROADER = {"tags": ["half"]}  # 50%
EXACT_MAX = 500
INDEX_MAX = 250  # keeps BROAD's 600 rows on HNSW: even the wide bound for a 10% share is 2 x 250
EF = 10  # low, so the index path's accuracy comes from raising it by the filter's share (to 100)


@dataclass
class Planned:
    conn: psycopg.Connection
    model: models.EmbeddingModelRef
    vectors: dict[int, np.ndarray]


@pytest.fixture(scope="module")
def planned(pg_server) -> Iterator[Planned]:
    name = pg_server.create_database("plans")
    conn = open_connection(pg_server.url(name), autocommit=True)
    try:
        model = models.register_model(conn, "hash", "plan-test", DIMS)
        vault_id = add_vault(conn, "v")
        conn.execute(
            "insert into documents (vault_id, source_path, folder, document_version, size_bytes)"
            " select %s, 'area' || (d %% 10) || '/topic' || (d / 10) || '/doc' || d || '.md',"
            "        'area' || (d %% 10) || '/topic' || (d / 10), 'v1', 1 from generate_series(0, %s - 1) d",
            (vault_id, DOCS))
        conn.execute(
            "insert into chunks (document_id, vault_id, ordinal, content, metadata)"
            " select d.id, d.vault_id, g, 'chunk ' || g, jsonb_build_object('vault', 'v', 'folder', d.folder,"
            "   'date', to_char(date '2020-01-01' + (d.id * %s + g)::integer, 'YYYY-MM-DD'),"
            "   'tags', case when (d.id * 7 + g) %% 100 = 0 then '[\"rare\"]'::jsonb"
            "                when (d.id + g) %% 2 = 0 then '[\"half\"]'::jsonb else '[]'::jsonb end)"
            " from documents d cross join generate_series(0, %s - 1) g", (PER_DOC, PER_DOC))
        rows = conn.execute("select id from chunks order by id").fetchall()
        vectors = dict(zip((r["id"] for r in rows), random_unit_vectors(np.random.default_rng(5), len(rows), DIMS),
                           strict=True))
        index = sql.Identifier(f"{model.embedding_table}_hnsw_idx")
        conn.execute(sql.SQL("drop index {}").format(index))
        add_embeddings(conn, model, vectors.items())
        conn.execute("select ragpg_create_hnsw_index(%s)", (model.embedding_table,))
        conn.execute("vacuum analyze")
        yield Planned(conn, model, vectors)
    finally:
        conn.close()
        pg_server.drop_database(name)


_MATCHING: dict[str, list[int]] = {}


def matching(p: Planned, keep: dict) -> list[int]:
    key = json.dumps(keep, sort_keys=True)
    if key not in _MATCHING:
        _MATCHING[key] = [r["id"] for r in p.conn.execute(
            "select id from chunks where ragpg_filter_match(metadata, %s)", (Jsonb(keep),))]
    return _MATCHING[key]


def exact_top(p: Planned, query: np.ndarray, keep: dict, k: int = 10) -> list[int]:
    sims = {cid: float(p.vectors[cid] @ query / np.linalg.norm(query)) for cid in matching(p, keep)}
    return sorted(sims, key=lambda c: -sims[c])[:k]


def queries(n: int, seed: int) -> list[np.ndarray]:
    return list(np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32))


@pytest.mark.parametrize(("keep", "share", "same_top_k"), [(SELECTIVE, 0.01, 12), (BROAD, 0.1, 12), (BROADER, 0.5, 11)],
                         ids=["selective-1pct", "broad-folder-10pct", "broader-tags-50pct"])
def test_filtered_top_k_equals_the_exact_filtered_top_k(planned: Planned, keep: dict, share: float,
                                                       same_top_k: int) -> None:
    """The exact filtered top-k, in order, for (nearly) every query. Half the chunks are searched on
    HNSW (ef_search 200), whose graph over random 64-dim vectors differs with each build: over 60
    queries both ef_construction 64 and 128 matched 59 top-10s exactly and 99.7-99.8 % of the ids."""
    # the plan the case is about: exact below EXACT_MAX rows, HNSW above
    assert len(matching(planned, keep)) == pytest.approx(share * DOCS * PER_DOC, rel=0.2)
    same = overlap = 0
    for query in queries(12, seed=int(share * 100)):
        found = retrieve.match_vector(planned.conn, planned.model, query, match_count=10, similarity_threshold=-1,
                                      filter=keep, exact_scan_max_rows=EXACT_MAX)
        exact = exact_top(planned, query, keep)
        assert len(found) == 10
        same += [r.chunk_id for r in found] == exact
        overlap += len({r.chunk_id for r in found} & set(exact))
    assert same >= same_top_k
    assert overlap >= 120 - (12 - same_top_k)


# The statement that finds the filter's matching chunks (ragpg_vector_scores, 40_model_functions.sql).
MATCHING_IDS = "select array_agg(c.id), array_agg(distinct c.vault_id) from (select c.id, c.vault_id from chunks c"


def _plans(conn: psycopg.Connection) -> list[str]:
    conn.execute("load 'auto_explain'")
    for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
        conn.execute(f"set auto_explain.{setting}")
    conn.execute("set client_min_messages = notice")
    plans: list[str] = []
    conn.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
    return plans


def test_a_broad_filter_on_the_index_path_still_returns_the_exact_top_k(planned: Planned) -> None:
    """Seq scans and sorts off keep the plan on HNSW (at the ef_search a 10% filter gets, the planner
    prefers scanning 6000 rows exactly): the full k comes back, nearly all of the exact top-k."""
    conn = open_connection(planned.conn.info.dsn, autocommit=False)
    try:
        plans = _plans(conn)
        conn.execute("set enable_seqscan = off")
        conn.execute("set enable_sort = off")
        hits = 0
        for query in queries(12, seed=3):
            plans.clear()
            found = retrieve.match_vector(conn, planned.model, query, match_count=10, similarity_threshold=-1,
                                          filter=BROAD, exact_scan_max_rows=INDEX_MAX, ef_search=EF)
            assert len(found) == 10
            assert any(f"{planned.model.embedding_table}_hnsw_idx" in p and "array_agg" in p for p in plans)
            hits += len({r.chunk_id for r in found} & set(exact_top(planned, query, BROAD)))
        assert hits >= 0.9 * 120  # a random graph each build; the default-planner test above is exact
    finally:
        conn.close()


def assert_path_taken(p: Planned, keep: dict, exact_max: int, path: str, seed: int, ef_search: int | None = None
                      ) -> None:
    """The path ragpg_vector_scores chose (seq scans and sorts off: the function's choice, not the
    planner's), the full k either way, and the exact top-k on the exact path."""
    conn = open_connection(p.conn.info.dsn, autocommit=False)
    try:
        plans = _plans(conn)
        conn.execute("set enable_seqscan = off")
        conn.execute("set enable_sort = off")
        query = queries(1, seed=seed)[0]
        found = retrieve.match_vector(conn, p.model, query, match_count=10, similarity_threshold=-1,
                                      filter=keep, exact_scan_max_rows=exact_max, ef_search=ef_search)
        exact_ran = any("cosine_distance(e.embedding" in plan for plan in plans)
        index_ran = any(f"{p.model.embedding_table}_hnsw_idx" in plan and "array_agg" in plan for plan in plans)
        assert (exact_ran, index_ran) == ((True, False) if path == "exact" else (False, True))
        if path == "exact":
            assert [r.chunk_id for r in found] == exact_top(p, query, keep)
        assert len(found) == 10
    finally:
        conn.close()


@pytest.mark.parametrize(("exact_max", "path"), [(30, "exact"), (2, "index")])
def test_a_filter_narrower_than_the_deepest_index_search_is_scanned_exactly(planned: Planned, exact_max: int,
                                                                           path: str) -> None:
    """60 matching rows (1%; the block sample estimates 0.78%, ~47 rows) need ef_search 100/0.0078,
    ~13 times pgvector's cap of 1000: the exact bound grows ~13-fold, so 30 admits them (exact) and 2
    does not (~26 rows: HNSW)."""
    assert_path_taken(planned, SELECTIVE, exact_max, path, seed=17)


@pytest.mark.parametrize(("keep", "exact_max", "path"), [(BROAD, 400, "exact"), (BROAD, 250, "index"),
                                                         (BROADER, 2000, "index")],
                         ids=["10pct-within-twice-the-bound", "10pct-past-twice-the-bound", "50pct-share-too-wide"])
def test_a_narrow_share_is_scanned_exactly_up_to_twice_the_bound(planned: Planned, keep: dict, exact_max: int,
                                                                  path: str) -> None:
    """A filter keeping at most 15% of the chunks searched (BROAD: 600 of 6000) would have HNSW search near
    pgvector's ef cap; it is scanned exactly up to twice exact_scan_max_rows (400 -> 800 admits it, 250 -> 500
    does not). A wide share (BROADER: 3000 rows, 50%) keeps the plain bound and goes to HNSW."""
    assert_path_taken(planned, keep, exact_max, path, seed=23, ef_search=EF)


def test_the_folder_prefix_is_found_through_its_index(planned: Planned) -> None:
    conn = open_connection(planned.conn.info.dsn, autocommit=True)
    try:
        plans = _plans(conn)
        retrieve.match_vector(conn, planned.model, queries(1, seed=9)[0], match_count=10,
                              filter={"folder": {"$prefix": "area3/topic7"}})
        counted = [p for p in plans if MATCHING_IDS in p]
        assert counted and "Index Scan on chunks_folder_idx" in counted[0], counted
        assert "area3/topic7" in counted[0] and "Seq Scan on chunks" not in counted[0]
        # read as the byte range [prefix, prefix end): no `^@` tested again on each row found
        assert "~<~ 'area3/topic8'" in counted[0] and "^@" not in counted[0], counted
        # the exact scan then reads just those ids' vectors, without visiting the chunks again
        exact = [p for p in plans if "e.chunk_id = any((select $4)::bigint[])" in p]
        assert exact and " on chunks" not in exact[0] and "Index Scan" in exact[0], plans
        # the ids reach the plan as a parameter, not a constant estimated value by value
        assert "chunk_id = ANY ((InitPlan" in exact[0] and "chunk_id = ANY ('{" not in exact[0], exact[0]
        # Without a folder prefix the condition folds away (no index on folders asked for).
        plans.clear()
        retrieve.match_vector(conn, planned.model, queries(1, seed=9)[0], match_count=10, filter={"tags": ["rare"]})
        counted = [p for p in plans if MATCHING_IDS in p]
        assert counted and "chunks_folder" not in counted[0], counted
    finally:
        conn.close()



def test_a_filter_matching_nothing_is_looked_up_once(planned: Planned) -> None:
    """No chunk matches: the first statement's empty answer is the whole answer; the full list of
    matching ids (collected again only past the bound) is not asked for a second time."""
    conn = open_connection(planned.conn.info.dsn, autocommit=True)
    try:
        plans = _plans(conn)
        found = retrieve.match_vector(conn, planned.model, queries(1, seed=5)[0], match_count=10,
                                      filter={"folder": {"$prefix": "no-such-area/"}})
        assert found == []
        assert len([p for p in plans if MATCHING_IDS in p]) == 1, plans  # (with or without a limit)
    finally:
        conn.close()

def test_a_date_range_is_found_through_its_index_with_the_same_rows(planned: Planned) -> None:
    conn = open_connection(planned.conn.info.dsn, autocommit=True)
    recent = {"date": {"$gte": "2036-01-01"}}  # the last ~1.4% of 6000 consecutive days
    window = {"date": {"$gt": "2025-01-01", "$lte": "2025-03-01"}, "tags": ["half"]}
    try:
        plans = _plans(conn)
        for keep in (recent, window):
            plans.clear()
            query = queries(1, seed=13)[0]
            found = retrieve.match_vector(conn, planned.model, query, match_count=10, similarity_threshold=-1,
                                          filter=keep)
            counted = [p for p in plans if MATCHING_IDS in p]
            assert counted and "Index Scan on chunks_date_idx" in counted[0], counted
            assert [r.chunk_id for r in found] == exact_top(planned, query, keep)
    finally:
        conn.close()


def test_a_folder_held_as_an_array_still_matches_its_prefix(planned: Planned) -> None:
    """The jsonpath `starts with` matches an array holding a string with the prefix; the indexed
    condition keeps such rows (its `array` arm), so the index changes no result."""
    conn = planned.conn
    doc = conn.execute("select id, vault_id from documents order by id limit 1").fetchone()
    row = conn.execute("insert into chunks (document_id, vault_id, ordinal, content, metadata) values "
                       "(%s, %s, 9999, 'odd', %s) returning id",
                       (doc["id"], doc["vault_id"], Jsonb({"vault": "v", "folder": ["zz/odd", "area3/odd"]}))).fetchone()
    try:
        query = queries(1, seed=11)[0]
        add_embeddings(conn, planned.model, [(row["id"], query)])  # the best match of its own query
        for exact_max in (EXACT_MAX, 10_000):
            found = retrieve.match_vector(conn, planned.model, query, match_count=3, similarity_threshold=-1,
                                          filter=BROAD, exact_scan_max_rows=exact_max)
            assert found[0].chunk_id == row["id"]
        assert not retrieve.match_vector(conn, planned.model, query, match_count=3, similarity_threshold=-1,
                                         filter={"folder": {"$prefix": "zz/other"}})
    finally:
        conn.execute("delete from chunks where id = %s", (row["id"],))


PREFIXES = ["", "a", "area3/", "Caf\u00e9", "\u00e9", "x\ud7ff", "ab\U0010ffff", "\U0010ffff", "z\U0010ffff\U0010ffff",
            "\u65e5\u672c"]
STRINGS = PREFIXES + ["area3", "area30", "area3/x", "area3/\U0010ffff", "Caf\u00e9s", "Caf\u00ea", "Cafe",
                      "\u00e9t\u00e9", "\u00ea", "x\ud7ffy", "x\ue000", "ab\U0010ffffc", "ac", "z\U0010ffff",
                      "\u65e5\u672c\u8a9e", "\u65e5\u672d", "b", ""]


def test_a_prefix_range_holds_exactly_the_strings_with_the_prefix(planned: Planned) -> None:
    """The range a folder prefix is read through, [prefix, ragpg_text_prefix_end(prefix)) in byte
    order, holds the same strings as `^@`: last characters of one to four UTF-8 bytes, the one
    before the surrogates, the highest code point (no end of its own) and the empty prefix."""
    rows = planned.conn.execute(
        "select p, s, s ^@ p as starts, s ~>=~ p and (ragpg_text_prefix_end(p) is null"
        "       or s ~<~ ragpg_text_prefix_end(p)) as in_range"
        " from unnest(%s::text[]) p cross join unnest(%s::text[]) s", (PREFIXES, STRINGS)).fetchall()
    assert len(rows) == len(PREFIXES) * len(STRINGS)
    assert [(r["p"], r["s"]) for r in rows if r["starts"] != r["in_range"]] == []
    ends = planned.conn.execute("select array_agg(ragpg_text_prefix_end(p) order by o) as ends"
                                " from unnest(%s::text[]) with ordinality u(p, o)",
                                (["area3/", "Caf\u00e9", "x\ud7ff", "ab\U0010ffff", ""],)).fetchone()["ends"]
    assert ends == ["area30", "Caf\u00ea", "x\ue000", "ac", None]
