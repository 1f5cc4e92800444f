"""The indexer's writer thread: batches are written while the caller parses and embeds the next."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType

from rag.ingest import store


class BatchWriter:
    """Writes batches on a thread, so Postgres (HNSW inserts, tsvectors, BM25 triggers) works while
    Python parses and embeds the next batch. A short queue keeps memory bounded; the first write
    error stops further writes and is re-raised in the caller's thread.

    Batches that queued up while a write ran are written together, in one transaction: when
    Postgres is the bottleneck (it is on a first load: tsvectors, GIN, HNSW) fewer, larger writes
    cost less, and a large write on a small table takes the HNSW bulk-load path (`hnsw.py`). Every
    merged batch was already embedded, so a failure still leaves each document old or new.
    """

    QUEUE_DEPTH = 4  # batches waiting (each up to upsert_batch_documents); also the most merged into one write

    def __init__(self, write: Callable[[list[store.PreparedDocument]], None]) -> None:
        self._write = write
        self._queue: queue.Queue[list[store.PreparedDocument] | None] = queue.Queue(self.QUEUE_DEPTH)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="ragpg-index-writer", daemon=True)

    def __enter__(self) -> BatchWriter:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Batches already embedded are still committed when the caller fails: less to redo next run.
        self._queue.put(None)
        self._thread.join()
        if exc is None:
            self._raise_if_failed()

    def put(self, docs: list[store.PreparedDocument]) -> None:
        self._raise_if_failed()
        self._queue.put(docs)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def _loop(self) -> None:
        finished = False
        while not finished and (docs := self._queue.get()) is not None:
            for _ in range(self.QUEUE_DEPTH - 1):
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    finished = True
                    break
                docs = docs + more
            if self._error is None:
                try:
                    self._write(docs)
                except BaseException as exc:  # handed to the caller's thread, which re-raises it
                    self._error = exc
