"""A bulk load of one vault builds that vault's HNSW graph only (db/sql/25_bulk_load.sql): its
partition of the model's table is detached, loaded and attached back; every other vault's graph
stays the same index, untouched. A vault in the shared partition has no graph of its own: its load defers
none."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
import pytest

from rag.config import IngestSettings
from rag.ingest import bulk, store
from rag.store.models import EmbeddingModelRef, register_model
from rag.store.vaults import NewVault, Vault, add_vault, get_vault
from tests.ingest_db.test_bulk_copy import EMBEDDER, documents


@pytest.fixture
def vaults(aconn: psycopg.Connection, tmp_path: Any) -> tuple[EmbeddingModelRef, Vault, Vault]:
    model = register_model(aconn, EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dims)
    made = []
    for name in ("kept", "bulky"):
        (tmp_path / name).mkdir()
        made.append(add_vault(aconn, NewVault(name, tmp_path / name)))
        # partitions of their own, each with its graph (a vault past ingest.own_partition_min_chunks)
        aconn.execute("select ragpg_place_vault(%s, 1, 0)", (made[-1].id,))
    kept, bulky = made
    # the other vault holds more than the load, so a whole-table rule would not defer at all
    store.write_documents(aconn, kept.id, kept.text_search_config, documents("kept", 150, 1), model)
    return model, kept, bulky


def graphs(conn: psycopg.Connection, model: EmbeddingModelRef) -> dict[int, dict[str, Any]]:
    """Each vault's HNSW index: its oid, name, validity, and whether it hangs under the model's index."""
    rows = conn.execute(
        "select v.id as vault, c.oid::int8 as oid, c.relname as name, i.indisvalid as valid,"
        " exists (select from pg_inherits h where h.inhrelid = c.oid and h.inhparent = %s::regclass) as attached"
        " from vaults v join pg_index i on i.indrelid = to_regclass(ragpg_vault_partition_name(%s, v.id))"
        " join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam and a.amname = 'hnsw'",
        (f"{model.embedding_table}_hnsw_idx", model.embedding_table)).fetchall()
    return {r["vault"]: r for r in rows}


def nearest(conn: psycopg.Connection, model: EmbeddingModelRef, vault: str, vector: np.ndarray) -> list[str]:
    rows = conn.execute(f"select source_path, chunk_ordinal from {model.match_function}"  # noqa: S608 (generated name)
                        "(%s::text::vector, -1, 5, %s)",
                        ("[" + ",".join(map(str, vector.tolist())) + "]",
                         psycopg.types.json.Jsonb({"vault": vault}))).fetchall()
    return [f"{r['source_path']}#{r['chunk_ordinal']}" for r in rows]


def test_a_load_of_one_vault_builds_its_graph_and_leaves_the_others(aconn, vaults) -> None:
    model, kept, bulky = vaults
    before = graphs(aconn, model)
    assert before[kept.id]["attached"] and before[bulky.id]["attached"]

    docs = documents("bulky", 120, 2)
    report = bulk.load_documents(aconn, bulky, model, iter(docs), IngestSettings(bulk_batch_rows=50))

    assert report.deferred["hnsw"]  # the vault's graph: its partition was empty
    after = graphs(aconn, model)
    assert after[kept.id] == before[kept.id]  # the same index, never rebuilt
    assert after[bulky.id]["oid"] != before[bulky.id]["oid"]  # built anew, for this vault alone
    assert after[bulky.id]["valid"] and after[bulky.id]["attached"]
    assert after[bulky.id]["name"] == f"{model.embedding_table}_hnsw_idx_p{bulky.id}"
    assert aconn.execute("select count(*) as n from deferred_indexes").fetchone()["n"] == 0
    # every vector went to its chunk in the vault's partition, reachable through the parent
    counted = aconn.execute(f"select count(*) as n from {model.embedding_table} where vault_id = %s",  # noqa: S608
                            (bulky.id,)).fetchone()["n"]
    assert counted == sum(len(d.chunks) for d in docs) == report.chunks
    first = docs[7]
    assert nearest(aconn, model, "bulky", np.asarray(first.vectors[0]))[0] == f"{first.source_path}#0"


def test_a_killed_load_leaves_the_vault_detached_and_the_next_load_attaches_it(aconn, vaults) -> None:
    model, kept, bulky = vaults
    settings = IngestSettings(bulk_batch_rows=40)
    deferral = bulk.Deferral(aconn, bulky.id, model, settings, vault_graph=True)
    deferral.start(None)
    assert deferral.hnsw and deferral.embedding_target == f"{model.embedding_table}_p{bulky.id}"
    loaded = documents("bulky", 30, 3)
    bulk.copy_batch(aconn, get_vault(aconn, "bulky"), model, loaded, embedding_table=deferral.embedding_target)
    # detached: the vault's vectors are not searched meanwhile; the other vault's are
    assert nearest(aconn, model, "bulky", np.asarray(loaded[0].vectors[0])) == []
    assert nearest(aconn, model, "kept", np.asarray(loaded[0].vectors[0]))
    aconn.execute("select pg_advisory_unlock_all()")  # what the killed process's session end does

    bulk.load_documents(aconn, bulky, model, iter([]), settings)
    after = graphs(aconn, model)
    assert after[bulky.id]["valid"] and after[bulky.id]["attached"]
    assert aconn.execute("select count(*) as n from deferred_indexes").fetchone()["n"] == 0
    assert nearest(aconn, model, "bulky", np.asarray(loaded[0].vectors[0]))[0] == f"{loaded[0].source_path}#0"


def test_a_vault_removed_while_detached_takes_its_partition(aconn, vaults) -> None:
    model, kept, bulky = vaults
    bulk.Deferral(aconn, bulky.id, model, IngestSettings(), vault_graph=True).start(None)
    aconn.execute("select pg_advisory_unlock_all()")
    aconn.execute("delete from vaults where id = %s", (bulky.id,))
    assert aconn.execute("select to_regclass(%s) as t", (f"{model.embedding_table}_p{bulky.id}",)).fetchone()["t"] is None
    aconn.execute("select ragpg_create_deferred_indexes(table_name) from deferred_indexes")  # nothing to build
    assert set(graphs(aconn, model)) == {kept.id}


def test_a_load_into_the_shared_partition_defers_no_graph(aconn: psycopg.Connection, tmp_path: Any) -> None:
    model = register_model(aconn, EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dims)
    (tmp_path / "small").mkdir()
    small = add_vault(aconn, NewVault("small", tmp_path / "small"))
    shared_graph = f"{model.embedding_table}_hnsw_idx_shared"
    oid = aconn.execute("select to_regclass(%s)::oid::int8 as o", (shared_graph,)).fetchone()["o"]
    docs = documents("small", 60, 2)
    report = bulk.load_documents(aconn, small, model, iter(docs), IngestSettings(bulk_batch_rows=50),
                                 expected_chunks=sum(len(d.chunks) for d in docs))
    assert not report.deferred["hnsw"]  # the shared graph is every small vault's: never dropped for one
    assert aconn.execute("select to_regclass(%s)::oid::int8 as o", (shared_graph,)).fetchone()["o"] == oid
    assert aconn.execute("select ragpg_vault_has_own_partition(%s) as own", (small.id,)).fetchone()["own"] is False
    first = docs[7]
    assert nearest(aconn, model, "small", np.asarray(first.vectors[0]))[0] == f"{first.source_path}#0"
    # a load that takes it past ingest.own_partition_min_chunks moves it first, with what it held
    bulk.load_documents(aconn, small, model, iter(documents("small", 60, 3, prefix="more")),
                                 IngestSettings(bulk_batch_rows=50, own_partition_min_chunks=200), expected_chunks=120)
    assert aconn.execute("select ragpg_vault_has_own_partition(%s) as own", (small.id,)).fetchone()["own"] is True
    assert nearest(aconn, model, "small", np.asarray(first.vectors[0]))[0] == f"{first.source_path}#0"


def test_only_an_embeddings_partition_is_detached(aconn, vaults) -> None:
    model, kept, _ = vaults
    with pytest.raises(psycopg.errors.UndefinedObject, match="not a vault's embeddings partition"):
        aconn.execute("select * from ragpg_defer_vault_hnsw(%s)", (f"chunks_p{kept.id}",))
    assert graphs(aconn, model)[kept.id]["attached"]
