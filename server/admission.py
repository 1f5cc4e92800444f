"""Bounded admission: at most `concurrency` requests run, at most `queue_size` more wait.

A request that finds `concurrency + queue_size` already admitted is refused at once with an
AdmissionError (→ 429 + Retry-After) instead of piling up. Admitted work runs in a worker thread
through a CapacityLimiter of `concurrency` tokens, so at most `concurrency` threads hold database
connections (the pool is sized ≥ concurrency) and waiting requests hold none. Requests that may
wait on a language model run in a lane (`run(..., within=...)`): a second admission whose slots are
taken before the main one's threads, so at most `server.llm_concurrency` threads wait on the model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from rag.errors import AdmissionError

T = TypeVar("T")


class Admission:
    def __init__(self, concurrency: int, queue_size: int, retry_after_s: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be ≥ 1")
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._in_flight = 0
        self.admitted_total = 0
        self.rejected_total = 0
        # CapacityLimiter binds to the event loop it is created in: one per loop (tests may run
        # several loops over one app; a server process runs one).
        self._limiters: dict[int, anyio.CapacityLimiter] = {}

    @property
    def capacity(self) -> int:
        return self.concurrency + self.queue_size

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _limiter(self) -> anyio.CapacityLimiter:
        import asyncio

        key = id(asyncio.get_running_loop())
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = anyio.CapacityLimiter(self.concurrency)
        return limiter

    def _enter(self) -> None:
        with self._lock:
            if self._in_flight >= self.capacity:
                self.rejected_total += 1
                raise AdmissionError(
                    f"server at capacity ({self.concurrency} running, {self.queue_size} queued); "
                    f"retry after {self.retry_after_s}s")
            self._in_flight += 1
            self.admitted_total += 1

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    async def run(self, fn: Callable[[], T], *, within: Admission | None = None) -> T:
        """Admit (or refuse) the request, then run `fn` in a worker thread once a slot is free.

        With `within`, this admission is a lane of that one: a request takes a slot here, then one of
        `within`'s threads, so the lane never holds more than `concurrency` of them (requests that wait
        on a language model cannot take every thread from those that do not)."""
        self._enter()
        try:
            # Not abandoned on cancellation: the slot is held until the thread (and its
            # database connection) is really done.
            if within is None:
                return await anyio.to_thread.run_sync(fn, limiter=self._limiter())
            async with self._limiter():
                return await anyio.to_thread.run_sync(fn, limiter=within._limiter())
        finally:
            self._leave()
