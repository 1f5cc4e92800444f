"""Background index runs (for `POST /v1/index`): a row in `index_runs` per run, its status and
progress kept current while one worker thread indexes the vaults.

Runs execute one at a time, in submission order (indexing one vault twice at once would only
contend on its advisory lock). A run is `queued` → `running` → `succeeded` | `failed`; progress is
a JSON object updated at most every PROGRESS_INTERVAL_S seconds.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from rag.access import CONFIDENTIALITY_LEVELS, Scope
from rag.errors import AuthError, ConflictError, InputError, NotFoundError, RagError
from rag.store.database import Connection

if TYPE_CHECKING:
    from rag.runtime import Runtime

log = logging.getLogger("ragpg.index_runs")

PROGRESS_INTERVAL_S = 0.5
MAX_ERROR_CHARS = 2000

MAX_SKIPS_RECORDED = 20


class ProgressSink(Protocol):
    """rag.ingest.report.IndexProgress: what the pipeline reports while it works."""

    def phase(self, text: str) -> None: ...
    def begin_vault(self, vault: str, files: int) -> None: ...
    def files_done(self, n: int) -> None: ...
    def chunks_queued(self, n: int) -> None: ...
    def chunks_done(self, n: int) -> None: ...


class ReportLike(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


# (runtime, vault names, progress sink) → the pipeline's IndexReport (per-vault errors inside it).
IndexFn = Callable[["Runtime", list[str], ProgressSink], ReportLike]


@dataclass(frozen=True)
class IndexRun:
    id: uuid.UUID
    vaults: list[str]
    status: str
    progress: dict[str, Any]
    error: str | None
    created_at: datetime
    finished_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": str(self.id), "vaults": list(self.vaults), "status": self.status, "progress": self.progress,
                "error": self.error, "created_at": self.created_at, "finished_at": self.finished_at}


_COLUMNS = sql.SQL(", ").join(
    sql.Identifier(c) for c in ("id", "vaults", "status", "progress", "error", "created_at", "finished_at"))


def parse_run_id(run_id: str | uuid.UUID) -> uuid.UUID:
    if isinstance(run_id, uuid.UUID):
        return run_id
    try:
        return uuid.UUID(run_id)
    except (ValueError, TypeError, AttributeError):
        raise InputError(f"invalid index run id {str(run_id)[:60]!r}: expected a UUID") from None


# Advisory lock key ("RAGQ") serialising the queued-run check and insert across server workers.
_QUEUE_LOCK = 0x52414751


def create_run(conn: Connection, vaults: Sequence[str]) -> IndexRun:
    """A queued run, unless one of `vaults` already has a queued run (ConflictError): a caller cannot
    pile up work, and a second queued run of a vault would only redo what the first one does."""
    with conn.transaction(), conn.cursor(row_factory=class_row(IndexRun)) as cur:
        conn.execute("select pg_advisory_xact_lock(%s)", (_QUEUE_LOCK,))
        queued = cur.execute(sql.SQL("select {} from index_runs where status = 'queued' and vaults && %s "
                                     "order by created_at limit 1").format(_COLUMNS), (list(vaults),)).fetchone()
        if queued is not None:
            clash = next(v for v in vaults if v in queued.vaults)
            raise ConflictError(f"vault '{clash}' already has a queued index run ({queued.id}); "
                                f"poll GET /v1/index/{queued.id}")
        row = cur.execute(sql.SQL("insert into index_runs (id, vaults) values (%s, %s) returning {}").format(_COLUMNS),
                          (uuid.uuid4(), list(vaults))).fetchone()
    assert row is not None
    return row


def get_run(conn: Connection, run_id: str | uuid.UUID, *, scope: Scope | None = None) -> IndexRun:
    """The run, or NotFoundError; a run touching a vault outside `scope` is reported as not found."""
    rid = parse_run_id(run_id)
    with conn.cursor(row_factory=class_row(IndexRun)) as cur:
        row = cur.execute(sql.SQL("select {} from index_runs where id = %s").format(_COLUMNS), (rid,)).fetchone()
    if not conn.autocommit:
        conn.rollback()
    if row is None or (scope is not None and not all(scope.allows_vault(v) for v in row.vaults)):
        raise NotFoundError(f"no index run {rid}")
    return row if scope is None else redacted(row, scope)


HIDDEN = "file names and counts hidden: they need a key with clearance 'restricted'"


def redacted(run: IndexRun, scope: Scope) -> IndexRun:
    """The run as `scope` may see it. Skips, warnings and errors name files, and every count (files seen,
    indexed, skipped, chunks written, the live progress) includes notes of every level, so an edit to a
    note above the key's clearance would move them; a file's level is unknown until it is parsed (a
    skipped one never is). Below the top clearance only the run's status, vaults and times remain: fail
    closed rather than guess which figures are safe to show."""
    if scope.clearance == CONFIDENTIALITY_LEVELS[-1]:
        return run
    error = None if run.error is None else f"{len(run.error.split('; '))} vault(s) failed ({HIDDEN})"
    return replace(run, progress={"details_hidden": HIDDEN}, error=error)


_NOW = object()  # a column value meaning the database's now()


def _update(conn: Connection, run_id: uuid.UUID, **values: Any) -> None:
    assignments = []
    params: list[Any] = []
    for column, value in values.items():
        if value is _NOW:
            assignments.append(sql.SQL("{} = now()").format(sql.Identifier(column)))
        else:
            assignments.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(Jsonb(value) if isinstance(value, dict) else value)
    with conn.transaction():
        conn.execute(sql.SQL("update index_runs set {} where id = %s").format(sql.SQL(", ").join(assignments)),
                     (*params, run_id))


def default_index_fn(runtime: Runtime, names: list[str], progress: ProgressSink) -> ReportLike:
    """Index registered vaults with the ingestion pipeline (incremental, per-vault errors reported)."""
    from rag.ingest import pipeline

    return pipeline.index_vaults(runtime.settings, names, progress=progress, embedder=runtime.embedder)


class _RunProgress:
    """Turns the pipeline's progress calls into the run's `progress` JSON, written at most every
    PROGRESS_INTERVAL_S seconds."""

    def __init__(self, write: Callable[[dict[str, Any]], None], names: list[str]) -> None:
        self._write = write
        self._last = 0.0
        self.state: dict[str, Any] = {"vaults_total": len(names), "vaults_started": 0, "current_vault": None,
                                      "vaults": {}}

    def _current(self) -> dict[str, Any]:
        current: dict[str, Any] = self.state["vaults"].setdefault(self.state["current_vault"], {})
        return current

    def flush(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= PROGRESS_INTERVAL_S:
            self._last = now
            self._write(self.state)

    def begin_vault(self, vault: str, files: int) -> None:
        self.state["current_vault"] = vault
        self.state["vaults_started"] += 1
        self.state["vaults"][vault] = {"files_total": files, "files_done": 0, "chunks_done": 0}
        self.flush(force=True)

    def phase(self, text: str) -> None:
        self.state["phase"] = text
        self.flush()

    def chunks_queued(self, n: int) -> None:
        cur = self._current()
        cur["chunks_total"] = cur.get("chunks_total", 0) + n
        self.flush()

    def files_done(self, n: int) -> None:
        cur = self._current()
        cur["files_done"] = cur.get("files_done", 0) + n
        self.flush()

    def chunks_done(self, n: int) -> None:
        cur = self._current()
        cur["chunks_done"] = cur.get("chunks_done", 0) + n
        self.flush()


def _summarise(report: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's report, with skip lists cut to their first MAX_SKIPS_RECORDED entries."""
    out: dict[str, Any] = _jsonable(report)
    for vault in out.get("vaults", []):
        skipped = vault.get("skipped") or []
        if len(skipped) > MAX_SKIPS_RECORDED:
            vault["skipped"] = skipped[:MAX_SKIPS_RECORDED]
            vault["skipped_truncated"] = True
    return out


class IndexRunner:
    """Starts runs and executes them one at a time on a background thread."""

    def __init__(self, runtime: Runtime, index_fn: IndexFn | None = None) -> None:
        self.runtime = runtime
        self.index_fn = index_fn or default_index_fn
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragpg-index")
        self._lock = threading.Lock()
        self._pending: set[uuid.UUID] = set()
        self._closed = False

    def start(self, vaults: Sequence[str] | None, *, scope: Scope | None = None) -> IndexRun:
        """Record a queued run for `vaults` (none = every registered vault in scope) and schedule it."""
        from rag.store import vaults as vault_store

        scope = scope or Scope.unrestricted()
        if not scope.can_index:
            raise AuthError("this key may not start index runs (create one with `ragpg keys create --index`)")
        with self.runtime.connection() as conn:
            if vaults:
                denied = [v for v in vaults if not scope.allows_vault(v)]
                if denied:
                    raise AuthError(f"this key may not read vault '{denied[0]}'")
            names = [v.name for v in vault_store.resolve_vaults(conn, vaults) if scope.allows_vault(v.name)]
            if not names:
                raise NotFoundError("no registered vaults to index (add one with `ragpg vault add`)")
            run = create_run(conn, names)
        with self._lock:
            if self._closed:
                raise RagError("the server is shutting down; index run not started")
            self._pending.add(run.id)
            self._executor.submit(self._execute, run.id, names)
        return run

    def _write(self, run_id: uuid.UUID, **values: Any) -> None:
        # A connection only for the write: the run does not hold one while the pipeline works.
        with self.runtime.connection() as conn:
            _update(conn, run_id, **values)

    def _execute(self, run_id: uuid.UUID, names: list[str]) -> None:
        sink = _RunProgress(lambda state: self._write(run_id, progress=state), names)
        try:
            self._write(run_id, status="running", progress=sink.state)
            report = _summarise(self.index_fn(self.runtime, names, sink).to_dict())
            failed = [v for v in report.get("vaults", []) if v.get("error")]
            progress = {**sink.state, "current_vault": None, "report": report}
            if failed:
                error = "; ".join(f"vault '{v.get('vault')}': {v['error']}" for v in failed)
                self._fail(run_id, error[:MAX_ERROR_CHARS], progress)
            else:
                self._settle_replica(progress)
                self._write(run_id, status="succeeded", progress=progress, finished_at=_NOW)
        except Exception as exc:  # the run records any failure; the thread never dies silently
            log.warning("index run %s failed: %s", run_id, exc, exc_info=not isinstance(exc, RagError))
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self._fail(run_id, message[:MAX_ERROR_CHARS], {**sink.state, "current_vault": None})
        finally:
            with self._lock:
                self._pending.discard(run_id)

    def _settle_replica(self, progress: dict[str, Any]) -> None:
        """Read your index run: with a read replica, the run is reported succeeded only once the replica
        has replayed it (or db.replica_wait_s passed: then with a warning), so a client that polls for
        success and then searches finds what was indexed (docs/scaling.md)."""
        from rag.store.replica import lag_warning

        try:
            waited = self.runtime.wait_for_read_replica()
        except RagError as exc:  # the run itself succeeded on the primary
            log.warning("index run: %s", exc)
            progress["replica"] = {"caught_up": False, "error": str(exc)}
            return
        if waited is not None:
            progress["replica"] = waited.to_dict()
            if not waited.caught_up:
                log.warning("index run: %s", lag_warning(waited))

    def _fail(self, run_id: uuid.UUID, message: str, progress: dict[str, Any] | None = None) -> None:
        values: dict[str, Any] = {"status": "failed", "error": message, "finished_at": _NOW}
        if progress is not None:
            values["progress"] = progress
        try:
            self._write(run_id, **values)
        except Exception:  # the database itself is gone; nothing more to record
            log.exception("cannot record the failure of index run %s", run_id)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every submitted run finished (tests, shutdown); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._pending:
                    return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop taking runs; runs still queued or running after `timeout` are recorded as failed."""
        with self._lock:
            self._closed = True
        if not self.wait(timeout):
            with self._lock:
                unfinished = list(self._pending)
            for run_id in unfinished:
                self._fail(run_id, "the server shut down before the run finished")
        self._executor.shutdown(wait=False, cancel_futures=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
