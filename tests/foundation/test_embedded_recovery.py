"""Items 7 and 15: a first start killed half-way leaves nothing a later command trips over."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import REPO, ragpg, subprocess_env


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ragpg-recover-", dir="/tmp"))
    yield path
    ragpg("db", "stop", env={"RAGPG_DATA_DIR": str(path)})
    shutil.rmtree(path, ignore_errors=True)


def start_ok(data_dir: Path) -> str:
    out = ragpg("db", "start", env={"RAGPG_DATA_DIR": str(data_dir)}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stderr


@pytest.mark.parametrize("half_made", [
    {"PG_VERSION": "18\n", "base/1/junk": "x"},  # initdb killed before pg_control was written
    {"postgresql.conf": "# partial\n"},  # a cluster folder without PG_VERSION
], ids=["no-pg-control", "no-pg-version"])
def test_half_made_cluster_and_stale_staging_are_rebuilt(data_dir: Path, half_made: dict[str, str]) -> None:
    for rel, text in half_made.items():
        (data_dir / "pgdata" / rel).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / "pgdata" / rel).write_text(text)
    stale = data_dir / "pgdata.init-4242"
    (stale / "base").mkdir(parents=True)
    (stale / "base" / "big").write_bytes(b"\0" * 1_000_000)
    err = start_ok(data_dir)
    assert "removing the half-made database cluster" in err and str(data_dir / "pgdata") in err
    assert not stale.exists() and not list(data_dir.glob("pgdata.init-*"))
    assert (data_dir / "pgdata" / "global" / "pg_control").is_file()
    assert ragpg("db", "status", env={"RAGPG_DATA_DIR": str(data_dir)}).returncode == 0


def test_first_start_killed_at_any_moment_recovers(data_dir: Path) -> None:
    """kill -9 of the whole process group at several moments of the first start, then a normal start."""
    env = subprocess_env()
    for n, delay in enumerate((0.3, 0.8, 1.3)):
        target = data_dir / f"d{n}"
        proc = subprocess.Popen([sys.executable, "-m", "ragpg_cli.main", "db", "start"], cwd=REPO,
                                env={**env, "RAGPG_DATA_DIR": str(target)}, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        try:
            start_ok(target)
            assert not list(target.glob("pgdata.init-*"))
        finally:
            ragpg("db", "stop", env={"RAGPG_DATA_DIR": str(target)})


@pytest.mark.parametrize("url", ["postgresql://me@127.0.0.1:1/x", "postgresql://me@10.255.255.1:5432/x"],
                         ids=["refused", "unroutable"])
@pytest.mark.parametrize("command", [("search", "foo"), ("index",), ("db", "upgrade")])
def test_unreachable_database_url_is_one_line_exit_3_fast(url: str, command: tuple[str, ...]) -> None:
    """Item 12. "Fast": within db.connect_timeout_s (2 s), not the minutes an unroutable address takes
    without it. The bound is several times that plus start-up, so a loaded 2-core machine meets it
    (4.5 s failed there three times, issue 47); the exact figure is a benchmark's business."""
    started = time.monotonic()
    out = ragpg(*command, env={"DATABASE_URL": url, "RAGPG_EMBEDDING__MODEL": "hash"})
    assert time.monotonic() - started < 30
    assert out.returncode == 3, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to the database"), out.stderr
