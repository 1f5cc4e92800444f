"""The query log's writer, off the request path: a bounded queue and one daemon thread.

Every retrieval records its question for the SQL console (the question's embedding, and one
retrieval for each note among its first candidates: db/sql/90_console_search.sql). Written inline
that cost a round trip and a small write transaction per question (~1 ms, ~8 % of a
compute_context on NFCorpus). Here a request only appends to a queue; the writer thread takes what
has queued over a short linger (or a full batch, sooner) and sends it as ONE statement
(`ragpg_record_queries`) on its own connection to the primary, so N questions cost one round trip,
not N. Its own connection, not one of the pool's: a request never waits for a connection the writer
holds (the pool may be as small as one), and the writer never waits behind requests.

What may be lost, and when: a record that finds the queue full is dropped (counted, with a
warning when dropping starts and one with the total when it stops); a batch whose write fails is
dropped with a warning. Neither ever fails a question. `flush()` waits until everything queued is
written (tests, `ragpg` commands before they exit); `close()` flushes within a time limit and stops
the thread; writers still open at interpreter exit are flushed by an atexit hook.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag.store.database import Connection

log = logging.getLogger("ragpg.query_log")

RECORD_BATCH_SQL = "select ragpg_record_queries(%s::integer[], %s::text[], %s::vector[], %s::integer[], %s::bigint[])"


@dataclass(frozen=True)
class QueryRecord:
    model_id: int | None
    query: str
    embedding: np.ndarray | None
    chunk_ids: tuple[int, ...] = ()


@dataclass
class _Stats:
    written: int = 0
    dropped_full: int = 0  # the queue was full
    dropped_failed: int = 0  # the batch's write failed
    batches: int = 0
    dropping: int = field(default=0, repr=False)  # drops in the current full-queue episode
    failing: int = field(default=0, repr=False)  # records lost in the current run of failed writes


def batch_params(records: Sequence[QueryRecord]) -> tuple[list[int | None], list[str], list[np.ndarray | None],
                                                          list[int], list[int]]:
    """The five arrays of `ragpg_record_queries` for `records` (hits refer to questions 1-based)."""
    hit_queries = [i for i, r in enumerate(records, start=1) for _ in r.chunk_ids]
    hit_chunks = [c for r in records for c in r.chunk_ids]
    return ([r.model_id for r in records], [r.query for r in records], [r.embedding for r in records],
            hit_queries, hit_chunks)


class QueryLogWriter:
    """Queue records with `submit` (never blocks, never raises); one thread writes them in batches.

    `connect` opens an autocommit connection to the primary; the writer opens it on its first batch,
    keeps it, and opens a new one for the next batch after a failure.
    """

    def __init__(self, connect: Callable[[], Connection], *, queue_size: int, batch_size: int, linger_s: float,
                 exit_flush_s: float) -> None:
        self._connect = connect
        self._linger_s = linger_s
        self._flushing = 0  # callers waiting in flush(): the writer skips its linger
        self._conn: Connection | None = None
        self.exit_flush_s = exit_flush_s
        self._capacity = queue_size
        self._batch_size = batch_size
        self._queue: deque[QueryRecord] = deque()
        self._cond = threading.Condition()
        self._in_flight = 0  # records taken by the thread and not yet written or dropped
        self._closed = False
        self._thread: threading.Thread | None = None
        self.stats = _Stats()
        _live.add(self)

    # -- the request side ------------------------------------------------------------------------

    def submit(self, record: QueryRecord) -> bool:
        """Queue `record`; False (and counted) when the queue is full or the writer is closed."""
        with self._cond:
            if self._closed:
                return False
            if len(self._queue) >= self._capacity:
                self.stats.dropped_full += 1
                self.stats.dropping += 1
                if self.stats.dropping == 1:
                    log.warning("query log queue full (%d records): dropping records for the SQL console "
                                "until the writer catches up", self._capacity)
                return False
            if self.stats.dropping:
                log.warning("query log: %d record(s) dropped while the queue was full", self.stats.dropping)
                self.stats.dropping = 0
            self._queue.append(record)
            self._start_locked()
            if len(self._queue) in (1, self._batch_size):  # the writer waits for the first, or lingers for a batch
                self._cond.notify_all()
            return True

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until every record queued so far is written or dropped. False on timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._queue or self._in_flight:
                    if self._thread is None or not self._thread.is_alive():
                        return False  # nobody left to write them
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(left)
            finally:
                self._flushing -= 1
        return True

    def close(self, timeout_s: float) -> bool:
        """Flush within `timeout_s`, then stop the thread. Records still queued then are dropped."""
        flushed = self.flush(timeout_s)
        with self._cond:
            self._closed = True
            left = len(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        if left:
            log.warning("query log: %d record(s) not written before close", left)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        if thread is None or not thread.is_alive():  # else the thread still uses it; it dies with the process
            self._drop_connection()
        _live.discard(self)
        return flushed and not left

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + self._in_flight

    # -- the writer thread -----------------------------------------------------------------------

    def _start_locked(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="ragpg-query-log", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        for batch in self._batches():
            try:
                self._write(batch)
            finally:
                with self._cond:
                    self._in_flight = 0
                    self._cond.notify_all()
        self._drop_connection()  # closed

    def _batches(self) -> Iterator[list[QueryRecord]]:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                # Linger so that steady traffic is written a batch at a time, not one statement per question.
                until = time.monotonic() + self._linger_s
                while len(self._queue) < self._batch_size and not self._closed and not self._flushing:
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._closed:
                    return
                batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
                self._in_flight = len(batch)
            yield batch

    def _write(self, batch: list[QueryRecord]) -> None:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            self._send(self._conn, batch)
        except Exception as exc:  # a failure to record must never surface anywhere but the log
            self._drop_connection()  # whatever failed, the next batch starts on a fresh connection
            self.stats.dropped_failed += len(batch)
            self.stats.failing += len(batch)
            if self.stats.failing == len(batch):  # the first failure of a run: one warning, not one per batch
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                log.warning("query log: records for the SQL console are not being written: %s", first)
            return
        if self.stats.failing:
            log.warning("query log: writing again; %d record(s) were lost", self.stats.failing)
            self.stats.failing = 0
        self.stats.written += len(batch)
        self.stats.batches += 1


    def _send(self, conn: Connection, batch: list[QueryRecord]) -> None:
        conn.execute(RECORD_BATCH_SQL, batch_params(batch))

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already gone: nothing to release
                pass


_live: weakref.WeakSet[QueryLogWriter] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    # Daemon threads still run while atexit hooks do: give each writer its last records' worth of time.
    for writer in list(_live):
        try:
            writer.flush(writer.exit_flush_s)
        except Exception:  # exiting anyway: never turn a clean exit into a traceback
            pass
