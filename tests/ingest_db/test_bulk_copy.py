"""Bulk loads of precomputed rows (rag/ingest/bulk.py): COPY batches with BM25 bookkeeping and
index builds deferred to the end must leave exactly what the row-by-row write path leaves."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from rag.config import IngestSettings
from rag.embed.hash import HashEmbedder
from rag.ingest import build_memory, bulk, store
from rag.ingest.passage_text import embedding_text
from rag.ingest.store import PreparedChunk, PreparedDocument
from rag.store.models import EmbeddingModelRef, register_model
from rag.store.vaults import NewVault, Vault, add_vault, get_vault
from tests.ingest_db.helpers import add, index, with_settings
from tests.support.files import write_files

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda river mountain cloud stone "
         "running runner runs ran quickly slowly bright dark tree forest ocean wave signal noise").split()
EMBEDDER = HashEmbedder(384)


def documents(vault: str, n: int, seed: int, prefix: str = "doc") -> list[PreparedDocument]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        doc = PreparedDocument(
            source_path=f"f{i % 3}/{prefix}{i}.md", folder=f"f{i % 3}", title=f"Title {i}", url=None,
            doc_type="note", persona=None, tags=[f"t{i % 4}"], project=None, confidentiality="public",
            doc_date="2024-01-02", document_version=f"v{seed}-{i}", size_bytes=100, metadata={"n": i})
        base = store.document_metadata(vault, doc)
        for ordinal in range(rng.randint(1, 4)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
            heading = f"Part {ordinal}"
            doc.chunks.append(PreparedChunk(ordinal, heading, text, len(text.split()), 1, 2, 0, len(text), [], 0.0,
                                            {**base, "ordinal": ordinal, "heading_path": heading}))
        doc.vectors = EMBEDDER.embed_documents([embedding_text(c.heading_path, c.content, c.metadata)
                                                for c in doc.chunks])
        docs.append(doc)
    return docs


def bm25_state(conn: psycopg.Connection, vault: str) -> dict[str, Any]:
    """The vault's BM25 statistics and postings, keyed by (source_path, ordinal) instead of ids."""
    vid = conn.execute("select id from vaults where name = %s", (vault,)).fetchone()["id"]
    stats = conn.execute("select chunk_count, total_length from bm25_vault_stats where vault_id = %s",
                         (vid,)).fetchone()
    terms = conn.execute("select lexeme, chunk_frequency from bm25_term_stats where vault_id = %s order by 1",
                         (vid,)).fetchall()
    postings = conn.execute(
        "select p.lexeme, d.source_path, c.ordinal, p.tf, p.dl, p.text_search_config::text as cfg "
        "from bm25_postings p join chunks c on c.id = p.chunk_id join documents d on d.id = c.document_id "
        "where p.vault_id = %s order by 1, 2, 3", (vid,)).fetchall()
    return {"stats": stats, "terms": [tuple(r.values()) for r in terms],
            "postings": [tuple(r.values()) for r in postings]}


def chunk_index_definitions(conn: psycopg.Connection, table: str) -> dict[str, str]:
    rows = conn.execute("select c.relname, pg_get_indexdef(i.indexrelid) as d from pg_index i "
                        "join pg_class c on c.oid = i.indexrelid where i.indrelid = %s::regclass", (table,)).fetchall()
    return {r["relname"]: r["d"] for r in rows}


@pytest.fixture
def setup(aconn: psycopg.Connection, tmp_path: Any) -> tuple[EmbeddingModelRef, Vault, Vault]:
    model = register_model(aconn, EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dims)
    for name in ("rows", "bulky"):
        (tmp_path / name).mkdir()
    rows = add_vault(aconn, NewVault("rows", tmp_path / "rows"))
    bulky = add_vault(aconn, NewVault("bulky", tmp_path / "bulky"))
    return model, rows, bulky


def test_bulk_load_leaves_the_same_bm25_and_indexes_as_row_by_row_writes(aconn, setup) -> None:
    model, rows, bulky = setup
    indexes_before = {t: chunk_index_definitions(aconn, t) for t in ("chunks", "bm25_postings", model.embedding_table)}
    for start in range(0, 120, 16):  # the indexer's path: one insert statement per batch, triggers on
        store.write_documents(aconn, rows.id, rows.text_search_config, documents("rows", 120, 1)[start:start + 16],
                              model)

    settings = IngestSettings(bulk_batch_rows=50)
    report = bulk.load_documents(aconn, bulky, model, iter(documents("bulky", 120, 1)), settings)

    assert report.documents == 120 and report.chunks == aconn.execute(
        "select count(*) as n from chunks where vault_id = %s", (rows.id,)).fetchone()["n"]
    # (no graph deferred: the vault is in the shared partition, whose graph is every small vault's)
    assert report.deferred == {"bm25": True, "chunk_indexes": True, "hnsw": False}
    assert set(report.seconds) >= {"copy", "bm25", "chunk_indexes", "vacuum_analyze", "total"}
    assert bm25_state(aconn, "bulky") == bm25_state(aconn, "rows")
    assert bm25_state(aconn, "rows")["postings"]  # something was compared
    # Everything dropped is back, defined as the migrations define it; nothing is left deferred.
    assert {t: chunk_index_definitions(aconn, t) for t in ("chunks", "bm25_postings", model.embedding_table)} == indexes_before
    assert aconn.execute("select count(*) as n from deferred_indexes").fetchone()["n"] == 0
    assert aconn.execute("select count(*) as n from bm25_deferred").fetchone()["n"] == 0
    # Same rows, vectors on the right chunks, same BM25 ranking.
    for query in ("river stone", "quickly running", "dark forest ocean"):
        found = {v: [(r["source_path"], r["chunk_ordinal"], round(r["bm25_score"], 9)) for r in aconn.execute(
            "select * from match_lexical_chunks(%s, 10, %s)", (query, psycopg.types.json.Jsonb({"vault": v})))]
            for v in ("rows", "bulky")}
        assert found["rows"] == found["bulky"] and found["rows"]
    mismatched = aconn.execute(
        f"select count(*) as n from chunks c join {model.embedding_table} e on e.chunk_id = c.id "  # noqa: S608
        "join documents d on d.id = c.document_id join vaults v on v.id = c.vault_id "
        f"join {model.embedding_table} e2 on e2.chunk_id = (select c2.id from chunks c2 join documents d2 "  # noqa: S608
        " on d2.id = c2.document_id where d2.vault_id = %s and d2.source_path = d.source_path "
        " and c2.ordinal = c.ordinal) where v.name = 'bulky' and e.embedding <> e2.embedding", (rows.id,)).fetchone()
    assert mismatched["n"] == 0


def test_deferred_rows_are_not_counted_twice_through_deletes_updates_and_replacements(aconn, setup) -> None:
    model, rows, bulky = setup
    settings = IngestSettings(bulk_batch_rows=40)
    for vault in (rows, bulky):  # both start with the same stored documents, written row by row
        store.write_documents(aconn, vault.id, vault.text_search_config, documents(vault.name, 30, 2), model)

    def edits(vault: Vault) -> None:
        # New documents, then replacements of stored ones and of new ones, deletes and an update.
        bulk.copy_batch(aconn, vault, model, documents(vault.name, 20, 3, prefix="new"))
        replaced = documents(vault.name, 5, 4)  # doc0..doc4 exist: stored before the deferral
        again = documents(vault.name, 5, 5, prefix="new")  # new0..new4: added while deferred
        for d in (*replaced, *again):
            d.replaces = True
        bulk.copy_batch(aconn, vault, model, [*replaced, *again])
        store.delete_documents(aconn, vault.id, ["f1/doc7.md", "f2/new8.md"])
        aconn.execute("update chunks set content = content || ' extra words' where vault_id = %s "
                      "and document_id in (select id from documents where source_path in ('f0/doc9.md', 'f0/new9.md'))",
                      (vault.id,))

    edits(rows)
    deferral = bulk.Deferral(aconn, bulky.id, model, settings)
    deferral.start(None)
    assert deferral.bm25
    edits(bulky)
    # Before the restore the deferred rows are invisible to BM25; afterwards the state is the same.
    assert bm25_state(aconn, "bulky") != bm25_state(aconn, "rows")
    deferral.finish(0, {})
    assert bm25_state(aconn, "bulky") == bm25_state(aconn, "rows")


def test_a_failed_load_keeps_what_it_loaded_and_a_killed_one_is_finished_by_the_next(aconn, setup) -> None:
    model, rows, bulky = setup
    settings = IngestSettings(bulk_batch_rows=30)

    def failing() -> Iterator[PreparedDocument]:
        yield from documents("bulky", 40, 6)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        bulk.load_documents(aconn, bulky, model, failing(), settings)
    # The committed batches stay (the one being gathered is lost), and their BM25 is complete.
    loaded = {r["source_path"] for r in aconn.execute("select source_path from documents where vault_id = %s",
                                                      (bulky.id,))}
    assert 0 < len(loaded) < 40
    store.write_documents(aconn, rows.id, rows.text_search_config,
                          [d for d in documents("rows", 40, 6) if d.source_path in loaded], model)
    assert bm25_state(aconn, "bulky") == bm25_state(aconn, "rows")
    assert aconn.execute("select count(*) as n from deferred_indexes").fetchone()["n"] == 0

    # A load killed outright leaves its deferral behind; the next load of the vault finishes it first.
    extra = documents("bulky", 10, 7, prefix="extra")
    store.write_documents(aconn, rows.id, rows.text_search_config, documents("rows", 10, 7, prefix="extra"), model)
    bulk.Deferral(aconn, bulky.id, model, settings).start(None)
    bulk.copy_batch(aconn, get_vault(aconn, "bulky"), model, extra)
    aconn.execute("select pg_advisory_unlock_all()")  # what the killed process's session end does
    bulk.load_documents(aconn, bulky, model, iter([]), settings)
    assert bm25_state(aconn, "bulky") == bm25_state(aconn, "rows")
    assert aconn.execute("select count(*) as n from deferred_indexes").fetchone()["n"] == 0


def test_build_memory_fits_the_hnsw_graph_within_the_budget_and_is_reset(aconn) -> None:
    settings = IngestSettings(build_memory_fraction=0.5, build_memory_max_mb=1024, build_parallel_workers=1)
    server = {n: aconn.execute(f"show {n}").fetchone()[n] for n in ("maintenance_work_mem", "work_mem")}
    aconn.execute("set maintenance_work_mem = '64MB'")  # below the need, whatever the server grants
    plan = build_memory.plan(aconn, settings, 200_000, 384)
    assert plan.local and plan.needed_mb == pytest.approx(200_000 * (384 * 4 + 8 + 720) * 1.1 / 2**20, abs=1)
    assert plan.maintenance_work_mem_mb == plan.needed_mb  # ~475 MB: inside the 1 GiB cap
    big = build_memory.plan(aconn, settings, 5_000_000, 384)
    assert big.maintenance_work_mem_mb == 1024  # capped; the build still runs, partly on disk
    with build_memory.build_session(aconn, plan):
        assert aconn.execute("show maintenance_work_mem").fetchone()["maintenance_work_mem"] == \
            f"{plan.maintenance_work_mem_mb}MB"
        assert aconn.execute("show max_parallel_maintenance_workers").fetchone()[
            "max_parallel_maintenance_workers"] == "1"
    assert {n: aconn.execute(f"show {n}").fetchone()[n] for n in ("maintenance_work_mem", "work_mem")} == server


def test_vectors_must_match_chunks(aconn, setup) -> None:
    model, _, bulky = setup
    (doc,) = documents("bulky", 1, 8)
    doc.vectors = np.zeros((len(doc.chunks) + 1, 384), dtype=np.float32)
    with pytest.raises(ValueError, match="need as many vectors"):
        bulk.copy_batch(aconn, bulky, model, [doc])
    assert aconn.execute("select count(*) as n from documents").fetchone()["n"] == 0


def test_a_first_index_run_defers_bm25_and_ends_like_one_that_does_not(aconn, settings, tmp_path,
                                                                        monkeypatch) -> None:
    notes = {f"n{i:03d}.md": f"# Note {i}\n\nabout topic {i % 7} running {i}\n\n## Part\n\nmore words {i * 3}\n"
             for i in range(150)}
    for name in ("deferred", "direct"):
        add(aconn, name, write_files(tmp_path / name, notes))
    deferring = with_settings(settings, ingest={"bulk_load_min_vectors": 10, "upsert_batch_documents": 16})
    direct = with_settings(settings, ingest={"bulk_load_min_vectors": 10**9, "upsert_batch_documents": 16})
    seen: list[bool] = []
    original = bulk.Deferral.start

    def spy(self: bulk.Deferral, expected: int | None) -> None:
        original(self, expected)
        seen.append(self.bm25)

    monkeypatch.setattr(bulk.Deferral, "start", spy)
    assert index(deferring, "deferred").vaults[0].chunks_written == 300
    assert index(direct, "direct").vaults[0].chunks_written == 300
    assert seen == [True, False]
    assert bm25_state(aconn, "deferred")["postings"] and bm25_state(aconn, "deferred") == bm25_state(aconn, "direct")
    assert aconn.execute("select count(*) as n from bm25_deferred").fetchone()["n"] == 0
    # An incremental run of the same edits on both: nothing deferred (the vault dwarfs the change), same state.
    for name in ("deferred", "direct"):
        write_files(tmp_path / name, {"n001.md": "# Note 1\n\nrewritten entirely\n", "new.md": "# New\n\nfresh words\n"})
        (tmp_path / name / "n002.md").unlink()
        assert index(deferring, name).vaults[0].files_indexed == 2
    assert bm25_state(aconn, "deferred") == bm25_state(aconn, "direct")
