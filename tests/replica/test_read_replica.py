"""A read replica beside the primary (rag/store/replica.py, docs/scaling.md), on real servers: an
embedded primary and a streaming hot standby of it (tests/support/replica.py).

Reads (compute_context, search, the HTTP read routes) are served by the replica: with its replay
paused, a note indexed on the primary stays invisible to them. Writes (index runs, the query log)
go to the primary. Read your index run: `ragpg index` and POST /v1/index end only once the replica
has replayed the run (or warn after db.replica_wait_s).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql

import rag
from rag.access import Scope
from rag.config import Settings, load_settings
from rag.errors import DatabaseError
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store.database import open_connection
from rag.store.vaults import NewVault, add_vault
from ragpg_cli.main import main
from ragpg_server.app import create_app, pool_size_for
from tests.server.conftest import LOCAL_URL
from tests.support.files import write_files
from tests.support.pg import with_database
from tests.support.replica import ReplicatedPair

GARDEN = {"garden.md": "# Garden\nTomatoes need sun and water every morning.\n",
          "team/plan.md": "---\nconfidentiality: internal\n---\n# Plan\nThe tomato harvest plan for the team.\n"}
LANTERNS = "# Lanterns\nPaper lanterns glow over the river at the autumn festival.\n"
LANTERN_QUERY = "paper lanterns autumn festival river"
WAIT_S = 30.0


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicatedPair]:
    made = ReplicatedPair()
    try:
        made.start()
        yield made
    finally:
        made.stop()


@pytest.fixture
def urls(pair: ReplicatedPair) -> Iterator[tuple[str, str]]:
    """A fresh database on the primary (from the migrated `ragpg`), once the replica has it too."""
    name = f"ragpg_r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {} template ragpg").format(sql.Identifier(name)))
    primary, replica = with_database(pair.primary_url, name), with_database(pair.replica_url, name)
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            psycopg.connect(replica).close()
            break
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "the replica never replayed the new database"
            time.sleep(0.05)
    yield primary, replica
    pair.resume_replay()
    pair.apply_delay("0")
    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.fixture
def settings(urls: tuple[str, str], tmp_path: Path) -> Settings:
    primary, replica = urls
    return load_settings(tmp_path / "absent.toml", database_url=primary, read_database_url=replica,
                         data_dir=tmp_path / "data", embedding={"model": "hash"})


@pytest.fixture
def vault(settings: Settings, urls: tuple[str, str], tmp_path: Path) -> Path:
    root = write_files(tmp_path / "notes", GARDEN)
    with open_connection(urls[0], autocommit=True) as conn:
        add_vault(conn, NewVault(name="notes", path=root))
    assert not index_vaults(settings).failed
    return root


def count(url: str, query: str, *params: Any) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(query, params).fetchone()[0])


def documents(url: str, source_path: str) -> int:
    return count(url, "select count(*) from documents where source_path = %s", source_path)


def cited(result: Any) -> set[str]:
    return {c.source_path for c in result.citations}


def test_reads_are_served_by_the_replica_and_writes_by_the_primary(pair: ReplicatedPair, settings: Settings,
                                                                   urls: tuple[str, str], vault: Path) -> None:
    primary, replica = urls
    rt = Runtime(settings)
    try:
        waited = rt.wait_for_read_replica()
        assert waited is not None and waited.caught_up and waited.replica_is_standby
        with rt.connection(read=True) as conn:
            assert conn.execute("select pg_is_in_recovery() as r").fetchone()["r"] is True
        with rt.connection() as conn:
            assert conn.execute("select pg_is_in_recovery() as r").fetchone()["r"] is False
        assert "garden.md" in cited(rag.compute_context("tomatoes sun", runtime=rt))

        pair.pause_replay()  # from here the replica shows the database as it was
        write_files(vault, {"lanterns.md": LANTERNS})
        assert not index_vaults(settings).failed  # an index run writes to the primary
        assert (documents(primary, "lanterns.md"), documents(replica, "lanterns.md")) == (1, 0)
        assert "lanterns.md" not in cited(rag.compute_context(LANTERN_QUERY, runtime=rt))  # read on the replica
        assert "lanterns.md" not in {i.source_path for i in rag.search(LANTERN_QUERY, runtime=rt).items}
        # A scoped caller reads on the replica too, as ragpg_reader: the internal note stays hidden.
        public = rag.compute_context("tomato harvest plan", runtime=rt, scope=Scope(clearance="public"))
        assert "team/plan.md" not in cited(public)
        assert "team/plan.md" in cited(rag.compute_context("tomato harvest plan", runtime=rt))

        assert rt.query_log.flush(WAIT_S)  # the query log was written on the primary, not the replica
        logged = "select count(*) from query_embeddings where query_text = %s"
        assert (count(primary, logged, LANTERN_QUERY), count(replica, logged, LANTERN_QUERY)) == (1, 0)
        assert rt.query_log.stats.dropped_failed == 0

        pair.resume_replay()
        waited = rt.wait_for_read_replica()
        assert waited is not None and waited.caught_up
        assert "lanterns.md" in cited(rag.compute_context(LANTERN_QUERY, runtime=rt))
    finally:
        rt.close()


def test_ragpg_index_returns_once_the_replica_has_the_run(pair: ReplicatedPair, settings: Settings,
                                                         urls: tuple[str, str], vault: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    primary, replica = urls
    for key, value in {"DATABASE_URL": primary, "RAGPG_READ_DATABASE_URL": replica, "RAGPG_EMBEDDING__MODEL": "hash",
                       "RAGPG_CONFIG": str(tmp_path / "absent.toml"), "RAGPG_DATA_DIR": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    pair.apply_delay("1500ms")  # the replica applies each commit 1.5 s after the primary made it
    write_files(vault, {"lanterns.md": LANTERNS})
    assert main(["index", "--quiet", "notes"]) == 0
    assert documents(replica, "lanterns.md") == 1  # readable on the replica the moment the command returns

    # A replica slower than db.replica_wait_s: the run succeeds, with a warning, and reads catch up later.
    pair.apply_delay("4s")
    monkeypatch.setenv("RAGPG_DB__REPLICA_WAIT_S", "0.3")
    write_files(vault, {"late.md": "# Late\nA note the replica shows late.\n"})
    capsys.readouterr()
    assert main(["index", "--quiet", "notes"]) == 0
    err = capsys.readouterr().err
    assert "warning: the read replica has not replayed this run after 0.3 s" in err
    assert (documents(primary, "late.md"), documents(replica, "late.md")) == (1, 0)


def test_http_reads_on_the_replica_and_index_runs_end_when_it_caught_up(pair: ReplicatedPair, settings: Settings,
                                                                       urls: tuple[str, str], vault: Path) -> None:
    settings = settings.model_copy(update={"server": settings.server.model_copy(update={"concurrency": 2})})
    rt = Runtime.from_settings(settings, pool_max_size=pool_size_for(2))
    try:
        assert rt.wait_for_read_replica() is not None
        with TestClient(create_app(rt), base_url=LOCAL_URL, client=("127.0.0.1", 50123)) as client:
            health = client.get("/healthz")
            assert health.status_code == 200 and health.json()["read_replica"] is True
            pair.pause_replay()
            write_files(vault, {"lanterns.md": LANTERNS})
            assert not index_vaults(settings).failed
            body = client.post("/v1/context", json={"query": LANTERN_QUERY}).json()
            assert "lanterns.md" not in {c["source_path"] for c in body["citations"]}
            vaults = client.get("/v1/vaults").json()["vaults"]
            assert [(v["name"], v["documents"]) for v in vaults] == [("notes", 2)]  # the replica's count
            pair.resume_replay()

            pair.apply_delay("1500ms")
            write_files(vault, {"late.md": "# Late\nA late note about harvest moons.\n"})
            run = client.post("/v1/index", json={"vaults": ["notes"]}).json()
            deadline = time.monotonic() + WAIT_S
            while (state := client.get(f"/v1/index/{run['id']}").json())["status"] in ("queued", "running"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert state["status"] == "succeeded", state
            assert state["progress"]["replica"]["caught_up"] is True
            # reported succeeded only once the replica had it: a search right after finds it
            found = client.post("/v1/search", json={"query": "late note harvest moons"}).json()
            assert "late.md" in {i["source_path"] for i in found["items"]}
    finally:
        rt.close()


def test_an_unreachable_read_replica_is_one_clear_error_and_writes_still_work(
        settings: Settings, urls: tuple[str, str], vault: Path, tmp_path: Path) -> None:
    gone = f"postgresql://postgres@/ragpg?host={tmp_path / 'nowhere'}"
    broken = settings.model_copy(update={"read_database_url": gone})
    rt = Runtime(broken)
    try:
        with pytest.raises(DatabaseError, match=r"^cannot connect to the read replica at postgresql://"):
            rag.compute_context("tomatoes", runtime=rt)
        with rt.connection() as conn:  # the primary is unaffected
            assert conn.execute("select count(*) as n from documents").fetchone()["n"] == 2
        with TestClient(create_app(rt), base_url=LOCAL_URL, client=("127.0.0.1", 50123)) as client:
            health = client.get("/healthz")
            assert health.status_code == 503
            assert health.json()["read_replica"] is False and health.json()["database"] is True
            assert health.json()["message"].startswith("database unavailable: cannot connect to the read replica")
    finally:
        rt.close()
    with pytest.raises(DatabaseError, match="cannot connect to the read replica"):
        Runtime(broken).wait_for_read_replica()
