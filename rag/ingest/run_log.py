"""CLI index runs in `index_runs` (origin 'cli'), next to the runs `POST /v1/index` starts, so
`ragpg_index_runs_recent` in psql shows every run with its outcome. Recorded once, when the run
ends; failing to record is a warning, never a failed run."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from rag.ingest.report import IndexReport
from rag.store.database import Connection

log = logging.getLogger("ragpg.run_log")
MAX_ERROR_CHARS = 2000


def _summary(report: IndexReport) -> dict[str, Any]:
    data = report.to_dict()
    data["vaults"] = [{k: v for k, v in vault.items() if k not in ("skipped", "warnings")} for vault in data["vaults"]]
    return data


def record_cli_run(conn: Connection, report: IndexReport, started_at: datetime) -> uuid.UUID | None:
    """One finished run: succeeded unless a vault failed (then its first error)."""
    failed = report.failed
    error = "; ".join(f"{v.vault}: {v.error}" for v in failed)[:MAX_ERROR_CHARS] or None
    return _record_run(conn, [v.vault for v in report.vaults], "failed" if failed else "succeeded",
                       _summary(report), error, started_at)


INTERRUPTED_ERROR = "interrupted (Ctrl-C): each note is stored old or new; run the index again to finish"


def record_interrupted_run(conn: Connection, vaults: list[str], started_at: datetime) -> uuid.UUID | None:
    """A run stopped by Ctrl-C: `interrupted`, with INTERRUPTED_ERROR, so `ragpg_index_runs_recent` shows it."""
    return _record_run(conn, vaults, "interrupted", {"interrupted": True}, INTERRUPTED_ERROR, started_at)


def _record_run(conn: Connection, vaults: list[str], status: str, progress: dict[str, Any], error: str | None,
                started_at: datetime) -> uuid.UUID | None:
    """One row of index_runs for a CLI run; a database error is a warning (the run itself is done)."""
    run_id = uuid.uuid4()
    try:
        conn.execute(
            "insert into index_runs (id, vaults, status, progress, error, created_at, finished_at, origin)"
            " values (%s, %s, %s, %s, %s, %s, now(), 'cli')",
            (run_id, vaults, status, Jsonb(progress), error, started_at))
        if not conn.autocommit:
            conn.commit()
    except psycopg.Error as exc:
        log.warning("index run not recorded: %s", str(exc).strip().splitlines()[0] if str(exc) else exc)
        return None
    return run_id
