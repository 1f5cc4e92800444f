"""Failing fast while the database is down, and noticing quickly when it is back.

A pool left to itself makes every request wait its full timeout during an outage (requests queued
behind each other waited up to 90 s) and, once the database returns, reconnects on an exponential
backoff (30-40 s). Instead: the first failure marks the database down; while it is down a request
fails at once unless a probe is due (one per `outage_probe_interval_s`), and a probe that connects
tells the owner to replace its pool, so service resumes within about one probe interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg

from rag.errors import DatabaseError


class OutageGuard:
    def __init__(self, url: Callable[[], str], connect_timeout_s: float, probe_interval_s: float,
                 on_recovery: Callable[[], None]) -> None:
        self._url = url
        self._connect_timeout_s = connect_timeout_s
        self._interval = probe_interval_s
        self._on_recovery = on_recovery
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._last_probe = 0.0
        self._reason = ""

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, reason: str) -> None:
        with self._lock:
            if self._down_since is None:
                self._down_since = self._last_probe = time.monotonic()
            self._reason = reason

    def before_use(self) -> None:
        """Raise at once while the database is known down and no probe is due; probe when one is."""
        if self._down_since is None:
            return
        with self._lock:
            if self._down_since is None:
                return
            if time.monotonic() - self._last_probe < self._interval:
                raise DatabaseError(f"database unavailable: {self._reason}")
            self._last_probe = time.monotonic()
            try:
                psycopg.connect(self._url(), connect_timeout=max(1, round(self._connect_timeout_s))).close()
            except psycopg.Error as exc:
                self._reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection failed"
                raise DatabaseError(f"database unavailable: {self._reason}") from None
            self._down_since = None
        self._on_recovery()
