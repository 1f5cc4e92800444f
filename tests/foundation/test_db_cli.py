"""`ragpg db` lifecycle against real embedded servers, each in its own data dir under /tmp."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag.store.migrate import head_revision
from tests.support.cli import ragpg


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="ragpg-cli-", dir="/tmp"))
    yield path
    ragpg("db", "stop", env={"RAGPG_DATA_DIR": str(path)})
    shutil.rmtree(path, ignore_errors=True)


def _env(data_dir: Path) -> dict[str, str]:
    return {"RAGPG_DATA_DIR": str(data_dir)}


def _status(data_dir: Path) -> dict:
    out = ragpg("db", "status", "--json", env=_env(data_dir))
    return json.loads(out.stdout)


def test_start_status_url_stop_and_adopt(data_dir):
    env = _env(data_dir)
    assert ragpg("db", "status", env=env).returncode == 1

    first = ragpg("db", "start", "--json", env=env)
    assert first.returncode == 0, first.stderr
    started = json.loads(first.stdout)
    assert started["running"] and not started["adopted"] and started["revision"] == head_revision()

    status = _status(data_dir)
    assert status["schema_current"] and status["pgvector"].startswith("0.8")
    # data_dir is the setting's folder; the server's own files are in pgdata_dir below it
    assert (status["data_dir"], status["pgdata_dir"]) == (str(data_dir), str(data_dir / "pgdata"))

    # `ragpg db psql`: the psql the wheel ships, as the owner, its arguments passed through (with or without --)
    for argv in (["-X", "-At", "-c", "select current_user = (select rolname from pg_roles where oid = 10)"],
                 ["--", "-X", "-At", "-c", "select 41 + 1"]):
        done = ragpg("db", "psql", *argv, env={**env, "PATH": "/nonexistent"})  # no system psql to fall back on
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() in ("t", "42")
    failed = ragpg("db", "psql", "-X", "-c", "select 1/0", env=env)
    assert failed.returncode == 1 and "division by zero" in failed.stderr  # psql's own code and message

    # A second process connects through `ragpg db url`.
    url = ragpg("db", "url", env=env).stdout.strip()
    probe = subprocess.run([sys.executable, "-c",
                            "import sys, psycopg; print(psycopg.connect(sys.argv[1]).execute('select 41+1').fetchone()[0])",
                            url], capture_output=True, text=True, timeout=30)
    assert probe.stdout.strip() == "42", probe.stderr

    # The starting process has exited, yet the server keeps running: the next start adopts it.
    again = json.loads(ragpg("db", "start", "--json", env=env).stdout)
    assert again["adopted"] and again["pid"] == started["pid"]

    stopped = ragpg("db", "stop", env=env)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert ragpg("db", "status", env=env).returncode == 1
    assert "was not running" in ragpg("db", "stop", env=env).stdout


def test_two_concurrent_starts_share_one_server(data_dir):
    env = _env(data_dir)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: ragpg("db", "start", "--json", env=env), range(2)))
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    pids = {json.loads(r.stdout)["pid"] for r in results}
    assert len(pids) == 1
    assert sorted(json.loads(r.stdout)["adopted"] for r in results) == [False, True]


def test_restart_after_the_server_was_killed(data_dir):
    env = _env(data_dir)
    pid = json.loads(ragpg("db", "start", "--json", env=env).stdout)["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            time.sleep(0.05)
        except ProcessLookupError:
            break
    # postmaster.pid is left behind, stale: start must notice and start cleanly.
    assert (data_dir / "pgdata" / "postmaster.pid").exists()
    restarted = ragpg("db", "start", "--json", env=env)
    assert restarted.returncode == 0, restarted.stderr
    info = json.loads(restarted.stdout)
    assert info["pid"] != pid and not info["adopted"]
    assert _status(data_dir)["schema_current"]


def test_data_dir_that_is_not_writable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = ragpg("db", "start", env={"RAGPG_DATA_DIR": str(blocker / "data")})
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "not writable" in lines[0] and str(blocker / "data") in lines[0]
    assert blocker.read_text() == "not a directory"


def test_unreachable_database_url():
    out = ragpg("db", "upgrade", env={"DATABASE_URL": "postgresql://me:hunter2@127.0.0.1:1/nothing"})
    assert out.returncode == 3
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect") and "hunter2" not in out.stderr


def test_unknown_setting_in_config_file(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[retrieval]\nbm25_k1 = 1.2\nbm25_kappa = 3\n')
    out = ragpg("--config", str(config), "db", "status", env={"RAGPG_DATA_DIR": str(tmp_path / "d")})
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: unknown setting 'retrieval.bm25_kappa' (config file {config})"
    assert not (tmp_path / "d").exists()


def test_invalid_setting_value_in_environment(tmp_path):
    out = ragpg("db", "status", env={"RAGPG_DATA_DIR": str(tmp_path / "d"), "RAGPG_RETRIEVAL__BM25_B": "7"})
    assert out.returncode == 2 and "retrieval.bm25_b" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_every_command_has_help():
    for args in (["--help"], ["db", "--help"], ["db", "start", "--help"], ["db", "status", "--help"],
                 ["db", "url", "--help"], ["db", "upgrade", "--help"], ["db", "stop", "--help"],
                 ["db", "psql", "--help"]):
        out = ragpg(*args)
        assert out.returncode == 0 and "Usage" in out.stdout, args


def test_first_command_on_a_fresh_data_dir_prepares_the_schema(data_dir, tmp_path):
    """No `ragpg db start` first: the first command that needs the database starts and migrates it."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nhello\n")
    env = {**_env(data_dir), "RAGPG_EMBEDDING__MODEL": "hash"}
    added = ragpg("vault", "add", "notes", str(notes), env=env)
    assert added.returncode == 0, added.stderr
    assert _status(data_dir)["schema_current"]
    listed = ragpg("vault", "list", "--json", env=env)
    assert listed.returncode == 0 and "notes" in listed.stdout


def test_psql_gets_the_password_in_its_environment_not_its_arguments(monkeypatch):
    """Another user can read a process's arguments (ps), not its environment: the owner's password
    goes to psql as PGPASSWORD, and no PG* variable of the caller's changes where psql connects."""
    from ragpg_cli.psql import psql_invocation

    monkeypatch.setenv("PGSERVICE", "elsewhere")
    monkeypatch.setenv("PGHOST", "attacker.example")
    argv, env = psql_invocation("postgresql://owner:s3cr%40t@db.example:5433/ragpg?sslmode=require", ["-c", "x"])
    assert "s3cr" not in " ".join(argv) and env["PGPASSWORD"] == "s3cr@t"
    assert argv[-2:] == ["-c", "x"] and "host=db.example" in argv[1] and "sslmode=require" in argv[1]
    assert "PGSERVICE" not in env and "PGHOST" not in env
