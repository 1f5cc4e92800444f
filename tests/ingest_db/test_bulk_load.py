"""The HNSW bulk-load path: a large write on a small table rebuilds the model's index (same
definition, valid, every vector on its chunk); a small write on a bigger table inserts into it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from rag.config import Settings
from rag.embed.hash import HashEmbedder
from rag.ingest.passage_text import embedding_text
from tests.ingest_db.helpers import add, embedding_count, hnsw_definition, index, with_settings
from tests.support.files import write_files

TABLE = "embeddings_hash_feature_hash_384"
DEFINITION = hnsw_definition(TABLE)


def notes(first: int, count: int) -> dict[str, str]:
    return {f"n{i:03d}.md": f"# Note {i}\n\nabout topic {i % 5}\n\n## Part\n\nmore {i}\n"
            for i in range(first, first + count)}


def hnsw_index(conn: psycopg.Connection) -> dict[str, Any]:
    rows = conn.execute(
        "select i.indexrelid::int8 as oid, pg_get_indexdef(i.indexrelid) as definition, i.indisvalid as valid "
        "from pg_index i where i.indrelid = %s::regclass", (TABLE,)).fetchall()
    assert len(rows) == 2  # the primary key and the HNSW index
    (found,) = [r for r in rows if "hnsw" in r["definition"]]
    return found


def test_bulk_load_rebuilds_the_index_and_small_writes_insert(aconn: psycopg.Connection, settings: Settings,
                                                              tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", notes(0, 30))
    add(aconn, "v", root)
    bulky = with_settings(settings, ingest={"bulk_load_min_vectors": 10, "bulk_load_min_fraction": 0.5})
    report = index(bulky).vaults[0]
    assert report.error is None and report.chunks_written == 60
    first = hnsw_index(aconn)
    assert first["definition"] == DEFINITION and first["valid"]
    assert embedding_count(aconn, TABLE, "v") == 60

    # 2 new vectors on a table of 60: below both thresholds, inserted into the existing index.
    write_files(root, {"n000.md": "# Note 0\n\nchanged\n\n## Part\n\nmore 0\n"})
    assert index(bulky).vaults[0].files_indexed == 1
    assert hnsw_index(aconn)["oid"] == first["oid"]

    # 40 new vectors on a table of 60 (>= half of it): the index is dropped and rebuilt, identically.
    write_files(root, notes(30, 20))
    assert index(bulky).vaults[0].chunks_written == 40
    rebuilt = hnsw_index(aconn)
    assert rebuilt["oid"] != first["oid"] and rebuilt["definition"] == DEFINITION and rebuilt["valid"]

    embedder = HashEmbedder(settings.embedding.hash_dims)
    rows = aconn.execute(f"select c.heading_path, c.content, c.metadata, e.embedding from chunks c "  # noqa: S608 (constant)
                         f"join {TABLE} e on e.chunk_id = c.id").fetchall()
    assert len(rows) == 100
    for r in rows:
        expected = embedder.embed_documents([embedding_text(r["heading_path"], r["content"], r["metadata"])])[0]
        assert np.allclose(np.asarray(r["embedding"], dtype=np.float32), expected, atol=1e-6)
    # The rebuilt index serves nearest-neighbour queries.
    with aconn.transaction():
        aconn.execute("set local enable_seqscan = off")
        plan = aconn.execute(f"explain select chunk_id from {TABLE} order by embedding <=> %s::vector "  # noqa: S608
                             "limit 3", (str(list(map(float, rows[0]["embedding"]))),)).fetchall()
    assert any("hnsw_idx" in next(iter(p.values())) for p in plan)


def test_concurrent_bulk_loads_of_two_vaults_do_not_deadlock(aconn: psycopg.Connection, settings: Settings,
                                                             tmp_path: Path) -> None:
    # Both runs count rows, then want the table's ACCESS EXCLUSIVE lock: without serialising the
    # bulk candidates first, one of them is killed as a deadlock (seen without the lock).
    for name in ("a", "b"):
        add(aconn, name, write_files(tmp_path / name, notes(0, 300)))
    bulky = with_settings(settings, ingest={"bulk_load_min_vectors": 4, "bulk_load_min_fraction": 0.01,
                                            "upsert_batch_documents": 4})
    index(bulky, "a")  # registers the model; then both vaults load concurrently
    aconn.execute("delete from chunks")
    aconn.execute("delete from documents")
    reports: dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            reports[name] = index(bulky, name).vaults[0]
        except Exception as exc:  # e.g. psycopg's DeadlockDetected, shown by the assertion below
            reports[name] = exc

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [(getattr(r, "error", r), getattr(r, "chunks_written", 0)) for r in (reports["a"], reports["b"])] == [
        (None, 600), (None, 600)]
    assert embedding_count(aconn, TABLE, "a") == embedding_count(aconn, TABLE, "b") == 600
    assert hnsw_index(aconn)["valid"]
