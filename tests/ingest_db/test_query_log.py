"""The query log written off the request path (rag/store/query_log.py): a question never waits for
its record, records still land (flush, close, process exit), a full queue or a failed write costs
records with a warning, never a question, and one batch statement counts exactly what one call per
question would. Real notes indexed by the real CLI, real Postgres."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
import pytest

import rag
from rag.config import Settings
from rag.runtime import Runtime
from rag.store.query_log import RECORD_BATCH_SQL, QueryRecord, batch_params
from tests.ingest_db.test_row_security import QUERY, indexed  # noqa: F401
from tests.support.cli import subprocess_env

pytestmark = pytest.mark.usefixtures("indexed")
WAIT_S = 20.0


def count(conn: psycopg.Connection, table: str) -> int:
    return conn.execute(psycopg.sql.SQL("select count(*) as n from {}").format(psycopg.sql.Identifier(table))
                        ).fetchone()["n"]


@contextmanager
def table_locked(db_url: str, table: str) -> Iterator[None]:
    """Lock `table` from another session so that writes to it wait (reads do not)."""
    with psycopg.connect(db_url) as holder:
        holder.execute(psycopg.sql.SQL("lock table {} in share mode").format(psycopg.sql.Identifier(table)))
        yield
        holder.rollback()


def runtime(settings: Settings, **retrieval: Any) -> Runtime:
    return Runtime(settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update=retrieval)}))


def in_thread(fn: Any, timeout_s: float) -> Any:
    """fn() in a thread; fails the test (instead of hanging it) when it does not return in time."""
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    worker.start()
    worker.join(timeout_s)
    assert "value" in out, f"did not return within {timeout_s}s"
    return out["value"]


def test_a_question_never_waits_for_its_record(settings: Settings, aconn: psycopg.Connection, db_url: str) -> None:
    rt = Runtime(settings)
    try:
        with table_locked(db_url, "query_embeddings"):  # the write cannot happen yet
            result = in_thread(lambda: rag.compute_context(QUERY, runtime=rt), WAIT_S)
            assert result.citations  # answered while its record waits
            assert rt.query_log.pending == 1 and count(aconn, "query_embeddings") == 0
        assert rt.query_log.flush(WAIT_S)
        row = aconn.execute("select query_text, uses from query_embeddings").fetchone()
        assert (row["query_text"], row["uses"]) == (QUERY, 1)
        assert count(aconn, "document_retrievals") > 0
        rag.search("launch plan", runtime=rt)
    finally:
        rt.close()  # flushes what is still queued
    assert count(aconn, "query_embeddings") == 2


def test_one_batch_counts_what_one_call_per_question_would(aconn: psycopg.Connection) -> None:
    model = aconn.execute("select id, dims from embedding_models").fetchone()
    chunks = [r["id"] for r in aconn.execute("select c.id from chunks c join documents d on d.id = c.document_id "
                                             "order by d.source_path, c.ordinal")]
    rng = np.random.default_rng(7)
    vec = [rng.random(model["dims"], dtype=np.float32) for _ in range(3)]
    records = [QueryRecord(model["id"], "tomato", vec[0], (chunks[0], chunks[1])),
               QueryRecord(model["id"], " tomato ", vec[1], (chunks[0],)),  # the same question, trimmed
               QueryRecord(model["id"], "launch", vec[2], tuple(chunks)),
               QueryRecord(None, "no model", None, (chunks[-1],)),
               QueryRecord(model["id"], "   ", vec[2], ())]

    def state() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        cached = [(r["query_text"], r["uses"], r["embedding"].tolist()) for r in aconn.execute(
            "select query_text, uses, embedding from query_embeddings order by query_text")]
        counted = [(r["document_id"], r["retrievals"]) for r in aconn.execute(
            "select document_id, retrievals from document_retrievals order by document_id")]
        return cached, counted

    aconn.execute(RECORD_BATCH_SQL, batch_params(records))
    batched = state()
    aconn.execute("delete from query_embeddings; delete from document_retrievals")
    for r in records:
        aconn.execute("select ragpg_record_query(%s, %s, %s, %s)", (r.model_id, r.query, r.embedding, list(r.chunk_ids)))
    assert batched == state()
    assert [(q, uses) for q, uses, _ in batched[0]] == [("launch", 1), ("tomato", 2)]
    assert np.allclose(batched[0][1][2], vec[1], atol=1e-6)  # a repeated question keeps its latest embedding


def test_a_full_queue_drops_records_with_a_count_never_a_question(settings: Settings, aconn: psycopg.Connection,
                                                                   db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # questions with a word of the notes: one that shares none finds nothing (the search floor)
    rt = runtime(settings, query_log_queue_size=2, query_log_batch_size=1)
    try:
        with table_locked(db_url, "query_embeddings"):
            in_thread(lambda: rag.search("tomato question 0", runtime=rt), WAIT_S)
            deadline = time.monotonic() + WAIT_S
            while rt.query_log.pending != 1 or rt.query_log._queue:  # the writer holds it, stuck on the lock
                assert time.monotonic() < deadline
                time.sleep(0.01)
            with caplog.at_level(logging.WARNING, logger="ragpg.query_log"):
                for i in range(1, 5):  # two fit in the queue, two are dropped; every question is answered
                    assert in_thread(lambda i=i: rag.search(f"tomato question {i}", runtime=rt), WAIT_S).items
            assert rt.query_log.stats.dropped_full == 2
            full = [r.getMessage() for r in caplog.records if "queue full" in r.getMessage()]
            assert len(full) == 1  # one warning when dropping starts, not one per record
        assert rt.query_log.flush(WAIT_S)
        with caplog.at_level(logging.WARNING, logger="ragpg.query_log"):
            rag.search("tomato question 5", runtime=rt)
        assert any("2 record(s) dropped while the queue was full" in r.getMessage() for r in caplog.records)
    finally:
        rt.close()
    cached = [r["query_text"] for r in aconn.execute("select query_text from query_embeddings order by 1")]
    assert cached == ["tomato question 0", "tomato question 1", "tomato question 2", "tomato question 5"]


def test_a_failed_write_is_a_warning_and_writing_resumes(settings: Settings, aconn: psycopg.Connection,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    rt = Runtime(settings)
    try:
        model_id = aconn.execute("select id from embedding_models").fetchone()["id"]
        vec = np.ones(384, dtype=np.float32)
        with caplog.at_level(logging.WARNING, logger="ragpg.query_log"):
            # a model deleted since the question was asked: the batch's statement fails in Postgres
            assert rt.query_log.submit(QueryRecord(model_id + 1000, "orphan", vec))
            assert rt.query_log.flush(WAIT_S)
            assert rt.query_log.stats.dropped_failed == 1
            assert rag.search(QUERY, runtime=rt).items
            assert rt.query_log.flush(WAIT_S)
        messages = [r.getMessage() for r in caplog.records]
        assert any("not being written" in m and "foreign key" in m for m in messages)
        assert any("writing again; 1 record(s) were lost" in m for m in messages)
    finally:
        rt.close()
    assert [r["query_text"] for r in aconn.execute("select query_text from query_embeddings")] == [QUERY]


def test_records_queued_at_exit_are_written(settings: Settings, aconn: psycopg.Connection, db_url: str) -> None:
    script = textwrap.dedent(f"""
        from pathlib import Path
        import rag
        from rag.config import load_settings
        from rag.runtime import Runtime
        rt = Runtime(load_settings(Path({str(settings.data_dir / "none.toml")!r}), database_url={db_url!r},
                                   embedding={{"model": "hash"}}))
        rag.search({QUERY!r}, runtime=rt)  # no rt.close(): the atexit hook flushes the writer
    """)
    env = subprocess_env()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [r["query_text"] for r in aconn.execute("select query_text from query_embeddings")] == [QUERY]


def test_a_database_without_the_batch_function_loses_the_records_with_one_warning(
        settings: Settings, aconn: psycopg.Connection, caplog: pytest.LogCaptureFixture) -> None:
    # Every database is migrated to head (the project has no older release): there is no
    # one-statement-per-question fallback; a broken database is one failure among others.
    aconn.execute("drop function ragpg_record_queries(integer[], text[], vector[], integer[], bigint[])")
    rt = Runtime(settings)
    try:
        with caplog.at_level(logging.WARNING, logger="ragpg.query_log"):
            rag.search(QUERY, runtime=rt)  # the search itself does not fail
            rag.search("launch plan", runtime=rt)
            rt.query_log.flush(WAIT_S)
        assert rt.query_log.stats.dropped_failed == 2 and rt.query_log.stats.written == 0
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "not being written" in warnings[0] and "ragpg_record_queries" in warnings[0]
    finally:
        rt.close()
    assert aconn.execute("select count(*) as n from query_embeddings").fetchone()["n"] == 0
