"""One wall-clock budget for all the LLM work of a request, and the loop LLM calls wait on.

`llm_deadline(seconds)` opens the budget (`ask` and `compute_context` open one of `llm.deadline_s`);
every LLM call made inside it, in this thread or in threads `run_together` starts, shares it, and a
call made past it fails at once. A nested budget can only shorten the one around it. The server opens
`llm_cancellation()` around a request so that a client that hangs up cancels its calls.

Why a loop: a per-read timeout does not bound a call (an endpoint sending one byte every few seconds
never trips it), and a thread blocked in a read cannot be stopped. An LLM call is a coroutine on one
background event loop, bounded there by `asyncio.wait_for`, so the deadline or a cancellation closes
its connection whatever the endpoint sends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rag.errors import LLMError

T = TypeVar("T")

# What an LLM failure past the budget says: the decision record and the trace look for it.
DEADLINE_REASON = "llm deadline"
CANCELLED_REASON = "llm call cancelled"


class LLMDeadlineError(LLMError):
    """The request's LLM budget (`llm.deadline_s`) ran out before the model answered."""


class LLMCancelledError(LLMError):
    """The request's LLM calls were cancelled (the client went away)."""


class Cancellation:
    """Cancels a request's LLM calls in flight and refuses its later ones (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._pending: set[concurrent.futures.Future[Any]] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            pending = list(self._pending)
        for future in pending:
            future.cancel()  # cancels the coroutine on the loop, which closes its connection

    def track(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            cancelled = self._cancelled
            self._pending.add(future)
        if cancelled:
            future.cancel()

    def forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)


@dataclass(frozen=True)
class Budget:
    deadline: float  # time.monotonic() past which no LLM call may run; inf: none
    seconds: float  # the setting it came from, for the message
    cancellation: Cancellation = field(default_factory=Cancellation)

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()


_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("ragpg_llm_budget", default=None)
_llm_off: contextvars.ContextVar[bool] = contextvars.ContextVar("ragpg_llm_off", default=False)


def current_budget(default_s: float) -> Budget:
    """The budget in force, or one of `default_s` from now for a call made outside any."""
    budget = _budget.get()
    if budget is None or math.isinf(budget.deadline):
        outer = budget.cancellation if budget is not None else Cancellation()
        return Budget(time.monotonic() + default_s, default_s, outer)
    return budget


@contextmanager
def llm_deadline(seconds: float) -> Iterator[Budget]:
    """Every LLM call inside shares one budget of `seconds` (or what is left of an outer one, if less)."""
    outer = _budget.get()
    deadline = time.monotonic() + seconds
    if outer is not None and outer.deadline < deadline:
        budget = outer
    else:
        budget = Budget(deadline, seconds, outer.cancellation if outer is not None else Cancellation())
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


@contextmanager
def llm_cancellation() -> Iterator[Cancellation]:
    """A request whose LLM calls `cancel()` can stop (no deadline of its own: `llm_deadline` sets it)."""
    outer = _budget.get()
    cancellation = Cancellation()
    token = _budget.set(Budget(outer.deadline if outer else math.inf, outer.seconds if outer else math.inf,
                               cancellation))
    try:
        yield cancellation
    finally:
        _budget.reset(token)


@contextmanager
def without_llm() -> Iterator[None]:
    """No LLM inside (`rag.llm.get_llm` returns None): for fast paths such as search."""
    token = _llm_off.set(True)
    try:
        yield
    finally:
        _llm_off.reset(token)


def llm_is_off() -> bool:
    return _llm_off.get()


def run_together(calls: Sequence[Callable[[], T]]) -> list[T | LLMError]:
    """Run independent LLM steps at once, each in its own thread under the caller's budget; each
    result is its value or the LLMError it raised."""
    if len(calls) <= 1:
        return [_outcome(c) for c in calls]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="ragpg-llm") as pool:
        futures = [pool.submit(contextvars.copy_context().run, _outcome, c) for c in calls]
        return [f.result() for f in futures]


def in_background(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """Start `call` now in its own thread, under the caller's budget; its result (or exception) later."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=contextvars.copy_context().run, args=(run,), name="ragpg-llm-ahead", daemon=True).start()
    return future


def _outcome(call: Callable[[], T]) -> T | LLMError:
    try:
        return call()
    except LLMError as exc:
        return exc


# -- the loop the calls run on ----------------------------------------------------------------------

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """One event loop per process, in a daemon thread, started on first use: litellm's async clients
    are cached per loop, so one long-lived loop keeps their connections pooled."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ragpg-llm-loop", daemon=True).start()
            _loop = loop
        return _loop


def wait_within(budget: Budget, make: Callable[[float], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make(remaining_s)` on the background loop, bounded by the budget and stopped
    by its cancellation; LLMDeadlineError or LLMCancelledError when either comes first."""
    if budget.cancellation.cancelled:
        raise LLMCancelledError(f"{CANCELLED_REASON}: the request was cancelled")
    remaining = budget.remaining_s()
    if remaining <= 0:
        raise LLMDeadlineError(f"{DEADLINE_REASON}: llm.deadline_s ({budget.seconds:g} s) had passed")
    future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(make(remaining), remaining), _background_loop())
    budget.cancellation.track(future)
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise LLMCancelledError(f"{CANCELLED_REASON}: the request was cancelled") from None
    except TimeoutError:
        if budget.remaining_s() > 0:  # the provider's own timeout, not the budget
            raise
        raise LLMDeadlineError(f"{DEADLINE_REASON}: no answer within llm.deadline_s "
                               f"({budget.seconds:g} s)") from None
    finally:
        budget.cancellation.forget(future)
