"""A hybrid search lists the chunks its filter keeps once and hands the list to both legs
(db/sql/45_filter_listing.sql): each leg then returns exactly what it returns listing and checking
for itself, and a caller row-level security binds can never have a list admit a chunk it may not
read."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from rag.config import Settings
from rag.embed import Embedder, get_embedder
from rag.retrieval import retrieve
from rag.store import models
from tests.ingest_db.helpers import add, index
from tests.ingest_db.test_bm25_index_backend import (
    FILTERS,
    QUERIES,
    SHARED_VAULT,
    bm25_index_scans,
    own_partition,
)
from tests.ingest_db.test_row_security import console_conn, indexed, model_suffix  # noqa: F401
from tests.retrieval.test_vector import _auto_explain

LISTING = "from (select c.id, c.vault_id from chunks c where true"
ROW_CHECK = "(select 1 from chunks c where c.vault_id ="


@pytest.fixture
def help_vault(settings: Settings, aconn) -> tuple[Embedder, models.EmbeddingModelRef]:
    """The help vault indexed and analysed in partitions of its own, as a vault past
    ingest.own_partition_min_chunks (the small vaults' shared bm25 index answers no filtered search:
    the index path is a large vault's); its embedder and model."""
    add(aconn, "help", SHARED_VAULT)
    own_partition(aconn, "help")
    index(settings)
    aconn.execute("analyze")
    embedder = get_embedder(settings.embedding.model, settings.embedding)
    model = models.get_model(aconn, embedder.provider, embedder.model)
    assert model is not None
    return embedder, model


def _legs(conn: psycopg.Connection, model: models.EmbeddingModelRef, query: str, embedding: str, filter_: str,
          listed: dict[str, Any] | None) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    ids, vaults = (listed["ids"], listed["vault_ids"]) if listed else (None, None)
    lexical = conn.execute(
        "select chunk_id, round(bm25_score::numeric, 9) as s from ragpg_lexical_scores(%s, 20, %s, 0.9, 0.4, %s)"
        " order by 1", (query, filter_, ids if listed and listed["complete"] else None)).fetchall()
    vector = conn.execute(
        "select chunk_id, round(similarity::numeric, 9) as s from ragpg_vector_scores(%s, %s, %s, %s::vector, -1,"
        " 20, %s, 10000, 100, %s, %s) order by 1",
        (model.embedding_table, model.dims, model.model, embedding, filter_, ids, vaults)).fetchall()
    return [(r["chunk_id"], r["s"]) for r in lexical], [(r["chunk_id"], r["s"]) for r in vector]


def test_both_legs_return_with_the_list_what_they_return_without_it(help_vault, aconn) -> None:
    embedder, model = help_vault
    tagged = '{"tags": ["sync"]}'
    compared = 0
    for filter_ in [*FILTERS, tagged, '{"vault": "help", "folder": {"$prefix": "Plugins"}}']:
        listed = aconn.execute("select * from ragpg_filter_listing(%s, 10000)", (filter_,)).fetchone()
        assert listed["complete"] and listed["ids"] is not None, filter_
        assert sorted(listed["ids"]) == [r["id"] for r in aconn.execute(
            "select id from chunks where ragpg_filter_match(metadata || jsonb_build_object('vault', 'help'), %s)"
            " order by id", (filter_,))]
        for query in QUERIES[:8]:
            embedding = "[" + ",".join(map(str, embedder.embed_query(query).tolist())) + "]"
            with aconn.transaction():
                with_list = _legs(aconn, model, query, embedding, filter_, listed)
                scans = bm25_index_scans(aconn)
            assert with_list == _legs(aconn, model, query, embedding, filter_, None), (filter_, query)
            compared += bool(with_list[0]) and scans > 0  # the index path, its candidates checked on the list
    assert compared >= 10
    # a filter without a metadata part, and one past the exact scan's bound, are not listed for the BM25 leg
    assert aconn.execute("select ids from ragpg_filter_listing('{\"vault\": \"help\"}', 10000)").fetchone()["ids"] is None
    partial = aconn.execute("select * from ragpg_filter_listing(%s, 5)", (FILTERS[0],)).fetchone()
    assert not partial["complete"] and partial["ids"] is not None


def test_a_hybrid_search_lists_once_and_checks_candidates_on_the_list(help_vault, aconn) -> None:
    embedder, model = help_vault
    query = "obsidian notes and files"  # common words: the BM25 leg reads the index (test_bm25_index_backend)
    before = retrieve.match_hybrid(aconn, model, query, embedder.embed_query(query), match_count=10,
                                   similarity_threshold=-1, filter={"folder": {"$prefix": "Plugins"}})
    plans = _auto_explain(aconn)
    if plans is None:
        pytest.skip("auto_explain cannot be loaded on this server")
    after = retrieve.match_hybrid(aconn, model, query, embedder.embed_query(query), match_count=10,
                                  similarity_threshold=-1, filter={"folder": {"$prefix": "Plugins"}})
    assert [r.chunk_id for r in after] == [r.chunk_id for r in before] and len(after) == 10
    assert len([p for p in plans if LISTING in p]) == 1, plans
    assert any("ix.chunk_id = any($7)" in p for p in plans)
    assert not [p for p in plans if ROW_CHECK in p or "exists (select from chunks c" in p]


@pytest.mark.security
def test_a_list_passed_by_a_caller_row_security_binds_is_ignored(indexed, cli, aconn) -> None:  # noqa: F811
    """A public console role handing the scorers every chunk id (the restricted note's among them) gets
    what it gets without a list: its own policy still decides which chunks are candidates."""
    secret = aconn.execute("select c.id from chunks c join documents d on d.vault_id = c.vault_id"
                           " and d.id = c.document_id where d.source_path = 'vault/secret.md'").fetchone()["id"]
    every = [r["id"] for r in aconn.execute("select id from chunks")]
    suffix = model_suffix(aconn)
    model = aconn.execute("select * from embedding_models where sql_name = %s", (suffix,)).fetchone()
    query = aconn.execute("select embedding::text as e from " + model["embedding_table"] + " limit 1").fetchone()["e"]
    anything = Jsonb({"folder": {"$prefix": ""}})
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        assert conn.execute("select ids from ragpg_filter_listing(%s, 10000)", (anything,)).fetchone()["ids"] is None
        for listed in (None, every):
            lexical = conn.execute("select chunk_id from ragpg_lexical_scores('tomato launch code', 50, %s, 0.9, 0.4, %s)",
                                   (anything, listed)).fetchall()
            vector = conn.execute(
                "select chunk_id from ragpg_vector_scores(%s, %s, %s, %s::vector, -1, 50, %s, 10000, 100, %s, %s)",
                (model["embedding_table"], model["dims"], model["model"], query, anything, listed,
                 None if listed is None else [1, 2, 3])).fetchall()
            assert lexical and vector
            assert secret not in {r["chunk_id"] for r in lexical} | {r["chunk_id"] for r in vector}
