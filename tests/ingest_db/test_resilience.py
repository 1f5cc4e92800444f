"""Interrupted runs: a killed `ragpg index` and a failing embedding provider leave every document
old or new, keep what was committed, and a rerun ends exactly where an uninterrupted run does."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import psycopg
import pytest

from rag.config import EmbeddingSettings, Settings
from rag.embed import register_provider
from rag.embed.hash import HashEmbedder
from rag.store.database import open_connection
from tests.ingest_db.helpers import RAGPG, add, cli_env, embedding_count, index, snapshot
from tests.support import pg
from tests.support.files import write_files

HASH_TABLE = "embeddings_hash_feature_hash_384"


def notes(count: int) -> dict[str, str]:
    return {f"folder{i % 7}/note{i:04d}.md": f"# Note {i}\n\nabout topic {i % 13} and {i}\n\n## Part\n\nmore {i}\n"
            for i in range(count)}


class FlakyHash(HashEmbedder):
    """The hash model (same provider/model, same table) whose endpoint dies after `budget` calls."""

    budget: int | None = None

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if FlakyHash.budget is not None:
            if FlakyHash.budget <= 0:
                raise ConnectionError("embedding endpoint refused the connection")
            FlakyHash.budget -= 1
        return super().embed_batch(texts)


def _flaky(arg: str, settings: EmbeddingSettings) -> HashEmbedder:
    return FlakyHash(settings.hash_dims, batch_size=settings.batch_size)


@pytest.fixture
def flaky() -> Iterator[type[FlakyHash]]:
    register_provider("flaky", _flaky, replace=True)
    yield FlakyHash
    FlakyHash.budget = None


def test_provider_failing_mid_run(aconn: psycopg.Connection, settings: Settings, cli, flaky: type[FlakyHash],
                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = notes(8)
    add(aconn, "v", write_files(tmp_path / "v", files))
    monkeypatch.setenv("RAGPG_EMBEDDING__MODEL", "flaky")
    monkeypatch.setenv("RAGPG_INGEST__UPSERT_BATCH_DOCUMENTS", "1")
    flaky.budget = 3  # three documents embed, the fourth one's call fails
    code, out, err = cli("index", "--quiet")
    fourth = sorted(files)[3]
    assert code == 5
    assert (f"error: vault 'v': embedding failed for {fourth} in vault 'v': ConnectionError: "
            "embedding endpoint refused the connection") in err.splitlines()
    committed = [r["source_path"] for r in aconn.execute("select source_path from documents order by 1")]
    assert committed == sorted(files)[:3]  # what was embedded before the failure is kept
    assert embedding_count(aconn, HASH_TABLE, "v") == 6
    assert aconn.execute("select last_indexed_at from vaults").fetchone()["last_indexed_at"] is None

    flaky.budget = None  # the endpoint is back
    code, out, err = cli("index", "--quiet")
    assert code == 0 and "v: 8 files seen, 5 indexed, 3 unchanged" in out
    assert aconn.execute("select last_indexed_at from vaults").fetchone()["last_indexed_at"] is not None
    assert embedding_count(aconn, HASH_TABLE, "v") == 16


def _count(url: str) -> int:
    with open_connection(url, autocommit=True) as conn:
        return conn.execute("select count(*) as n from documents").fetchone()["n"]


def test_killed_index_run_resumes_to_the_same_state(aconn: psycopg.Connection, settings: Settings, db_url: str,
                                                     pg_server: pg.TestServer, tmp_path: Path) -> None:
    total = 400
    root = write_files(tmp_path / "v", notes(total))
    add(aconn, "v", root)
    env = cli_env(db_url, tmp_path, RAGPG_INGEST__UPSERT_BATCH_DOCUMENTS="1")
    proc = subprocess.Popen([*RAGPG, "index", "--quiet"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        # One open connection polls: opening one per poll took long enough on a busy machine for the
        # whole run to commit between two polls, and the kill then landed after the last document.
        with open_connection(db_url, autocommit=True) as watch:
            deadline = time.monotonic() + 120
            while (watch.execute("select count(*) as n from documents").fetchone()["n"] < 25
                   and proc.poll() is None and time.monotonic() < deadline):
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done = _count(db_url)
    assert 0 < done < total, f"the kill did not land mid-run ({done} of {total} documents)"
    partial = snapshot(aconn, "v")
    assert all(c["content"] for c in partial["chunks"])  # committed documents are whole
    assert embedding_count(aconn, HASH_TABLE, "v") == len(partial["chunks"])

    resumed = index(settings).vaults[0]
    assert resumed.error is None and resumed.files_unchanged == done and resumed.files_indexed == total - done

    reference_db = pg_server.create_database("ref")
    try:
        ref_url = pg_server.url(reference_db)
        with open_connection(ref_url, autocommit=True) as ref:
            add(ref, "v", root)
            index(settings.model_copy(update={"database_url": ref_url}))
            assert snapshot(aconn, "v") == snapshot(ref, "v")
            assert embedding_count(aconn, HASH_TABLE, "v") == embedding_count(ref, HASH_TABLE, "v") == 2 * total
    finally:
        pg_server.drop_database(reference_db)
