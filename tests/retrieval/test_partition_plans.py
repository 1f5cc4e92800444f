"""Partitions by vault (issues 34, 49): a search naming a vault with partitions of its own reads that partition
only, through its own HNSW graph and postings; a small vault's search reads its rows in the shared partition,
exactly, and no large vault's partition; and the keys follow the rules a distributed Postgres (Citus, distributing by
vault) imposes, so the schema can move there as it is."""

from __future__ import annotations

import re

import numpy as np
import psycopg

from rag.retrieval import retrieve
from rag.store import models
from tests.retrieval.corpus import add_document, add_embeddings, add_vault, random_unit_vectors
from tests.retrieval.test_vector import _auto_explain

# Tables that Citus would copy to every node: registries and bookkeeping, small and written rarely (the
# two bm25_ ones hold a row per vault at most). Every other table with a vault_id is distributed by it.
REFERENCE_TABLES = {"vaults", "embedding_models", "api_keys", "index_runs", "ragpg_console_roles",
                    "query_embeddings", "deferred_indexes", "alembic_version", "bm25_indexes", "bm25_deferred"}
DISTRIBUTION_COLUMN = "vault_id"


def _two_vaults(conn: psycopg.Connection, n: int, dims: int, *, own: bool = True
                ) -> tuple[models.EmbeddingModelRef, dict[str, int]]:
    """Two vaults of n chunks; `own`: each in partitions of its own (a vault past
    ingest.own_partition_min_chunks), else both in the shared ones."""
    model = models.register_model(conn, "hash", "partition-plan", dims)
    rng = np.random.default_rng(5)
    ids: dict[str, int] = {}
    for name in ("left", "right"):
        vault_id = ids[name] = add_vault(conn, name, own_partition=own)
        doc = add_document(conn, vault_id, f"{name}.md")
        conn.execute("insert into chunks (document_id, vault_id, ordinal, content, content_tsv, lexeme_count)"
                     " select %s, %s, g, 'chunk ' || g || ' about zebras',"
                     "        to_tsvector('english', 'chunk ' || g || ' about zebras'), 4"
                     " from generate_series(0, %s - 1) g", (doc, vault_id, n))
        chunk_ids = [r["id"] for r in conn.execute("select id from chunks where vault_id = %s order by id",
                                                   (vault_id,))]
        add_embeddings(conn, model, zip(chunk_ids, random_unit_vectors(rng, n, dims), strict=True))
    conn.execute("select ragpg_create_hnsw_index(%s)", (model.embedding_table,))
    conn.execute(psycopg.sql.SQL("analyze chunks, bm25_postings, {}").format(
        psycopg.sql.Identifier(model.embedding_table)))
    return model, ids


def test_a_vault_scoped_search_reads_one_partition(conn: psycopg.Connection) -> None:
    dims = 16
    model, ids = _two_vaults(conn, 3000, dims)
    query = np.random.default_rng(6).standard_normal(dims).astype(np.float32)
    plans = _auto_explain(conn)
    assert plans is not None, "auto_explain is part of every supported server"
    conn.execute("set auto_explain.log_analyze = on")  # a partition pruned at run time shows "never executed"
    vector = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                   filter={"vault": "left"})
    lexical = retrieve.match_lexical(conn, "zebras", match_count=10, filter={"vault": "left"})
    assert len(vector) == 10 and len(lexical) == 10
    left, right = ids["left"], ids["right"]
    table = model.embedding_table
    graph = [p for p in plans if "embedding <=>" in p and "Limit" in p]
    # one partition's graph, the other vault's embeddings never opened
    assert any(f"Index Scan using {table}_hnsw_idx_p{left} on {table}_p{left}" in p for p in graph), graph
    assert not any(re.search(rf"{table}(_hnsw_idx)?_p{right}\b", p) for p in plans)
    postings = [p for p in plans if "bm25_postings" in p]
    assert any(re.search(rf"on bm25_postings_p{left} .*\(actual .*rows=[1-9]", p) for p in postings), postings
    # the other vault's postings, statistics and chunks: absent from the plan, or pruned when it ran
    read = [line for p in plans for line in p.splitlines()
            if re.search(rf"(bm25_postings|chunks|bm25_term_stats)_p{right}\b", line) and "never executed" not in line]
    assert not read, read


def test_a_small_vault_is_scanned_exactly_in_the_shared_partition(conn: psycopg.Connection) -> None:
    dims = 16
    model, ids = _two_vaults(conn, 300, dims, own=False)
    big = add_vault(conn, "big", own_partition=True)
    query = np.random.default_rng(6).standard_normal(dims).astype(np.float32)
    plans = _auto_explain(conn)
    assert plans is not None
    conn.execute("set auto_explain.log_analyze = on")
    vector = retrieve.match_vector(conn, model, query, match_count=10, similarity_threshold=-1,
                                   filter={"vault": "left"})
    table = model.embedding_table
    exact = [r["chunk_id"] for r in conn.execute(psycopg.sql.SQL(
        "select chunk_id from {} where vault_id = %s order by embedding <=> %s::vector, chunk_id limit 10").format(
        psycopg.sql.Identifier(table)), (ids["left"], "[" + ",".join(map(str, query.tolist())) + "]"))]
    assert [r.chunk_id for r in vector] == exact  # every one of the vault's rows scored: the exact top 10
    searched = [p for p in plans if "cosine_distance" in p or "embedding <=>" in p]
    assert any(f"on {table}_shared" in p for p in searched), searched
    assert not any("hnsw" in p for p in searched), searched  # the shared graph is every small vault's: not walked
    assert not _other_vault_lines(plans, big)


def test_without_a_vault_every_partition_is_searched(conn: psycopg.Connection) -> None:
    dims = 16
    model, ids = _two_vaults(conn, 300, dims)
    query = np.random.default_rng(6).standard_normal(dims).astype(np.float32)
    rows = retrieve.match_vector(conn, model, query, match_count=600, similarity_threshold=-1)
    assert len(rows) == 600  # both vaults' rows, nothing lost to the partitioning
    scoped = retrieve.match_vector(conn, model, query, match_count=600, similarity_threshold=-1,
                                   filter={"vault": "right"})
    in_right = {r["id"] for r in conn.execute("select id from chunks where vault_id = %s", (ids["right"],))}
    assert {r.chunk_id for r in scoped} == in_right


def test_without_a_vault_each_graph_is_searched_on_its_own(conn: psycopg.Connection) -> None:
    """Naming no vault: the shared graph and each large vault's, each in a statement of its own that opens
    that partition alone (its ef_search sized by its rows), merged into the nearest of them all."""
    dims = 16
    model, ids = _two_vaults(conn, 300, dims)  # two large vaults
    small = add_vault(conn, "small")
    doc = add_document(conn, small, "small.md")
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content) select %s, %s, g, 'tiny ' || g"
                 " from generate_series(0, 99) g", (doc, small))
    rng = np.random.default_rng(9)
    small_ids = [r["id"] for r in conn.execute("select id from chunks where vault_id = %s order by id", (small,))]
    add_embeddings(conn, model, zip(small_ids, random_unit_vectors(rng, 100, dims), strict=True))
    query = rng.standard_normal(dims).astype(np.float32)
    text = "[" + ",".join(map(str, query.tolist())) + "]"
    exact = [r["chunk_id"] for r in conn.execute(psycopg.sql.SQL(
        "select chunk_id from {} order by embedding <=> %s::vector, chunk_id limit 20").format(
        psycopg.sql.Identifier(model.embedding_table)), (text,))]
    plans = _auto_explain(conn)
    assert plans is not None
    rows = retrieve.match_vector(conn, model, query, match_count=20, similarity_threshold=-1)
    assert [r.chunk_id for r in rows] == exact
    assert {r["vault_id"] for r in conn.execute("select distinct vault_id from chunks where id = any(%s)",
                                                (exact,))} == {ids["left"], ids["right"], small}  # all three graphs
    table = model.embedding_table
    searched = [p for p in plans if "embedding <=>" in p and "Limit" in p]
    opened = [sorted(set(re.findall(rf"\bon ({table}_(?:p\d+|shared))\b", p))) for p in searched]
    assert sorted(opened) == sorted([[f"{table}_p{ids['left']}"], [f"{table}_p{ids['right']}"], [f"{table}_shared"]])


def test_keys_follow_the_distribution_rules(conn: psycopg.Connection) -> None:
    """Citus: every primary key and unique constraint of a distributed table includes the distribution
    column, and a foreign key between distributed tables includes it on both sides; a distributed table
    may reference a reference table, never the other way round."""
    models.register_model(conn, "hash", "key-rules", 4)
    add_vault(conn, "k")
    tables = {r["relname"]: r["has_vault"] for r in conn.execute(
        "select c.relname, exists (select 1 from pg_attribute a where a.attrelid = c.oid"
        "                          and a.attname = %s and not a.attisdropped) as has_vault"
        " from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')"
        " and not c.relispartition", (DISTRIBUTION_COLUMN,))}
    distributed = {t for t, has_vault in tables.items() if has_vault} - REFERENCE_TABLES
    assert {"chunks", "documents", "bm25_postings", "bm25_term_stats", "bm25_vault_stats",
            "document_retrievals", "embeddings_hash_key_rules"} <= distributed
    unclassified = set(tables) - distributed - REFERENCE_TABLES
    assert not {t for t in unclassified if not t.startswith("ragpg_bm25_")}, unclassified
    assert REFERENCE_TABLES <= set(tables) | {"alembic_version"}

    constraints = conn.execute(
        "select k.conrelid::regclass::text as tbl, k.conname, k.contype, k.confrelid::regclass::text as ref,"
        "       array(select a.attname::text from unnest(k.conkey) with ordinality u (n, i) join pg_attribute a"
        "             on a.attrelid = k.conrelid and a.attnum = u.n order by u.i) as cols,"
        "       array(select a.attname::text from unnest(k.confkey) with ordinality u (n, i) join pg_attribute a"
        "             on a.attrelid = k.confrelid and a.attnum = u.n order by u.i) as ref_cols"
        " from pg_constraint k join pg_class c on c.oid = k.conrelid"
        " where k.contype in ('p', 'u', 'f') and c.relnamespace = 'public'::regnamespace"
        " and not c.relispartition and k.conparentid = 0").fetchall()
    checked = 0
    for k in constraints:
        if k["tbl"] not in distributed:
            if k["contype"] == "f":  # a reference table never points into a distributed one
                assert k["ref"] not in distributed, k
            continue
        checked += 1
        if k["contype"] in ("p", "u"):
            assert DISTRIBUTION_COLUMN in k["cols"], k
        elif k["ref"] in distributed:
            pairs = dict(zip(k["cols"], k["ref_cols"], strict=True))
            assert pairs.get(DISTRIBUTION_COLUMN) == DISTRIBUTION_COLUMN, k
        else:
            assert k["ref"] in REFERENCE_TABLES, k
    assert checked >= 15


def _other_vault_lines(plans: list[str], vault_id: int) -> list[str]:
    """Plan lines that name one of the vault's partitions (its chunks, postings, statistics, vectors)."""
    return [line for p in plans for line in p.splitlines()
            if re.search(rf"(chunks|bm25_postings|bm25_term_stats|embeddings_\w+)_p{vault_id}\b", line)]


def test_a_vault_scoped_search_never_opens_another_vault(conn: psycopg.Connection) -> None:
    # Pruned at run time, a partition is still opened for every call ("never executed" in the plan):
    # with 1,000 vaults that cost 154 ms of a one-vault lexical search and 4.4 ms per tie-break
    # lookup. A search that leaves out many vaults is planned for the ones it names, so only theirs
    # are opened (with a few vaults, one cached plan is cheaper: db/sql/50_lexical.sql).
    dims = 16
    model, ids = _two_vaults(conn, 400, dims)  # equal texts: every lexical score ties, so the tie-break runs
    left_out = conn.execute("select ragpg_plan_per_call_min_vaults_left_out() as n").fetchone()["n"]
    for i in range(left_out):
        add_vault(conn, f"empty{i}")
    conn.execute("update chunks set metadata = jsonb_build_object('tags', jsonb_build_array("
                 "case when ordinal %% 2 = 0 then 'even' else 'odd' end)) where vault_id = %s", (ids["left"],))
    query = np.random.default_rng(6).standard_normal(dims).astype(np.float32)
    plans = _auto_explain(conn)
    assert plans is not None
    conn.execute("set auto_explain.log_analyze = on")
    left = {"vault": "left"}
    assert len(retrieve.match_lexical(conn, "zebras", match_count=10, filter=left)) == 10
    assert len(retrieve.match_hybrid(conn, model, "zebras", query, match_count=10, similarity_threshold=-1,
                                     filter=left)) == 10
    assert len(retrieve.match_lexical(conn, "zebras", match_count=10, filter={**left, "tags": ["even"]})) == 10
    assert any("bm25_postings_p" in p for p in plans)  # the plans were seen
    assert _other_vault_lines(plans, ids["right"]) == []
    others = conn.execute("select id from vaults where name <> 'left'").fetchall()
    assert all(_other_vault_lines(plans, r["id"]) == [] for r in others)


def test_a_filter_share_is_measured_within_the_vaults_searched(conn: psycopg.Connection) -> None:
    # half of the small vault's chunks match; the large vault has none: the share within the small
    # vault is 1/2, not 1/2 of the small vault's part of the whole corpus
    model, ids = _two_vaults(conn, 300, 16)
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content)"
                 " select document_id, vault_id, ordinal + 300 * g, 'more' from chunks, generate_series(1, 9) g"
                 " where vault_id = %s and ordinal < 300", (ids["right"],))
    conn.execute("update chunks set metadata = jsonb_build_object('kind', 'a') where vault_id = %s and ordinal %% 2 = 0",
                 (ids["left"],))
    share = conn.execute(
        "select ragpg_filter_fraction(ragpg_filter_sql('c', 'metadata', f.containment, f.predicate, 5)"
        "                             || ' and c.vault_id = any($9)', f.containment, f.predicate, f.vars,"
        "                             array['left'], array[%s::bigint], 0, 300) as share"
        " from ragpg_compile_filter('{\"kind\": \"a\"}') f", (ids["left"],)).fetchone()["share"]
    assert 0.4 <= share <= 0.6, share
