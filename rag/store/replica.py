"""A read replica beside the primary: where reads go, and reading your own index run.

With `read_database_url` set (env RAGPG_READ_DATABASE_URL), the runtime lends retrieval reads
(compute_context, ask, search, the HTTP read routes) a connection of the replica and everything
else one of the primary (DATABASE_URL): index runs, migrations, vault and key admin, API-key checks
(a revoked key must stop working at once, not after replay) and the query log's writes.

A hot standby replays the primary's WAL a little behind it. The rule ragpg keeps, read your index
run: an index run (`ragpg index`, `ragpg reindex`, POST /v1/index) ends by waiting until the replica
has replayed the primary's WAL up to the run's last write (`wait_for_replay`, at most
`db.replica_wait_s`), so a search started after the run reports success finds what it indexed. A
replica that does not catch up in time costs a warning, never the run: the run succeeded on the
primary, and the replica shows it once replay gets there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

from rag.config import Settings
from rag.errors import DatabaseError
from rag.store.database import mask_url, open_connection


@dataclass(frozen=True)
class ReplayWait:
    """How waiting for the replica went: `caught_up` False means it timed out (or was not asked to wait)."""

    caught_up: bool
    target_lsn: str | None  # the primary's WAL position the replica had to reach
    waited_s: float
    replica_is_standby: bool = True

    def to_dict(self) -> dict[str, object]:
        return {"caught_up": self.caught_up, "target_lsn": self.target_lsn, "waited_s": round(self.waited_s, 3),
                "replica_is_standby": self.replica_is_standby}


def primary_lsn(primary_url: str, connect_timeout_s: float) -> str:
    """The primary's current WAL position: everything committed so far lies before it."""
    with open_connection(primary_url, autocommit=True, register_vector=False,
                         connect_timeout_s=connect_timeout_s) as conn:
        row = conn.execute("select pg_current_wal_lsn()::text as lsn").fetchone()
    assert row is not None  # a select without from returns one row
    return str(row["lsn"])


def wait_for_replay(primary_url: str, read_url: str, *, timeout_s: float, poll_s: float,
                    connect_timeout_s: float) -> ReplayWait:
    """Wait until the server at `read_url` has replayed the primary's WAL as of now, at most `timeout_s`.

    A `read_url` that is not in recovery (a primary, e.g. a multi-host URL that fell back to it) has
    nothing to replay: caught up at once."""
    started = time.monotonic()
    target = primary_lsn(primary_url, connect_timeout_s)
    try:
        conn = open_connection(read_url, autocommit=True, register_vector=False, connect_timeout_s=connect_timeout_s)
    except DatabaseError:
        raise DatabaseError(f"cannot connect to the read replica at {mask_url(read_url)}") from None
    with conn:
        while True:
            row = conn.execute("select pg_is_in_recovery() as standby, "
                               "coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false) as replayed",
                               (target,)).fetchone()
            assert row is not None
            waited = time.monotonic() - started
            if not row["standby"]:
                return ReplayWait(True, target, waited, replica_is_standby=False)
            if row["replayed"]:
                return ReplayWait(True, target, waited)
            if waited >= timeout_s:
                return ReplayWait(False, target, waited)
            time.sleep(min(poll_s, max(0.0, timeout_s - waited)))


def wait_after_writes(settings: Settings, primary_url: str) -> ReplayWait | None:
    """After an index run: wait for the configured read replica (None when there is none)."""
    read_url = settings.read_database_url
    if not read_url:
        return None
    db = settings.db
    try:
        return wait_for_replay(primary_url, read_url, timeout_s=db.replica_wait_s, poll_s=db.replica_poll_ms / 1000,
                               connect_timeout_s=db.connect_timeout_s)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseError(f"could not ask the read replica how far it has replayed: {first}") from None


def lag_warning(waited: ReplayWait) -> str:
    return (f"the read replica has not replayed this run after {waited.waited_s:.1f} s (db.replica_wait_s); "
            "searches may not see it until the replica catches up")
