"""uvicorn's HTTP protocol with the two deadlines it lacks: one for a request's headers, one for its body.

uvicorn times out only an idle kept-alive connection, and only until its next byte: a client that
connects and says nothing, or sends its headers (Slowloris) or its body a byte at a time, holds a
connection and a file descriptor for as long as it likes, and a few hundred such clients hold them
all. Here a connection must deliver a request's whole header block within `server.header_timeout_s`
of opening (or of the previous response, when kept alive), and the body within
`server.body_timeout_s` of the headers. A client past a deadline gets a 408 in the usual error
envelope (nothing, if it never sent a byte) and the connection is closed; the server serves others
all along.

Both of uvicorn's parsers (httptools, h11) get the same deadlines; `ragpg serve` passes
`protocol_factory(settings.server)` as uvicorn's `http`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Literal

from uvicorn.protocols.http.h11_impl import H11Protocol

from rag.config import ServerSettings
from ragpg_server.errors import error_body

Waiting = Literal["headers", "body"]


class Deadlines:
    """The deadline of one connection: armed for the headers when it opens and after each response,
    for the body once the headers are in; what is awaited decides which timeout applies."""

    def __init__(self, protocol: Any, header_timeout_s: float, body_timeout_s: float) -> None:
        self.protocol = protocol  # an HttpToolsProtocol or H11Protocol: transport, loop, cycle
        self.timeout_s: dict[Waiting, float] = {"headers": header_timeout_s, "body": body_timeout_s}
        self.waiting: Waiting | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.cycle: Any = None  # the request cycle current when the deadline was armed
        self.bytes_seen = 0

    def arm(self, waiting: Waiting) -> None:
        self.cancel()
        self.waiting, self.cycle, self.bytes_seen = waiting, self.protocol.cycle, 0
        self.timer = self.protocol.loop.call_later(self.timeout_s[waiting], self.expire)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.waiting = None, None

    def received(self, n: int) -> None:
        self.bytes_seen += n

    def advance(self) -> None:
        """After bytes were parsed: a request's headers complete (a new cycle, pipelined ones too) →
        await its body, if any; the body complete → nothing is due until the response is done."""
        protocol = self.protocol
        if protocol.transport.is_closing() or protocol.transport.get_protocol() is not protocol:
            self.cancel()  # closed, or upgraded to another protocol
            return
        cycle = protocol.cycle
        if cycle is not None and cycle is not self.cycle:
            self.cycle = cycle
            if cycle.more_body and not cycle.response_complete:
                self.arm("body")
            else:
                self.cancel()
        elif self.waiting == "body" and (cycle is None or not cycle.more_body):
            self.cancel()

    def response_done(self) -> None:
        protocol = self.protocol
        if protocol.transport.is_closing():
            self.cancel()
            return
        cycle = protocol.cycle
        if cycle is None or cycle.response_complete:
            self.arm("headers")  # kept alive: the next request's headers are due
        else:
            self.advance()  # a pipelined request started at once

    def expire(self) -> None:
        waiting, self.timer = self.waiting, None
        protocol = self.protocol
        if waiting is None or protocol.transport.is_closing():
            return
        cycle = protocol.cycle
        started = waiting == "body" and cycle is not None and cycle.response_started
        if not started and (waiting == "body" or self.bytes_seen):  # silent sockets are closed silently
            setting = "server.header_timeout_s" if waiting == "headers" else "server.body_timeout_s"
            protocol.transport.write(_timeout_response(
                f"the request {waiting} did not arrive within {self.timeout_s[waiting]:g} s ({setting})"))
        protocol.transport.close()  # uvicorn then tells the app the client disconnected


def _timeout_response(message: str) -> bytes:
    body = json.dumps(error_body("request_timeout", message), separators=(",", ":")).encode()
    head = ("HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
    return head + body


class _WithDeadlines:
    """The deadlines, hooked into the uvicorn protocol class this is mixed in before."""

    deadlines: Deadlines

    def __init__(self, *args: Any, header_timeout_s: float, body_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadlines = Deadlines(self, header_timeout_s, body_timeout_s)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]  # the protocol's, next in the MRO
        self.deadlines.arm("headers")

    def data_received(self, data: bytes) -> None:
        self.deadlines.received(len(data))
        super().data_received(data)  # type: ignore[misc]
        self.deadlines.advance()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self.deadlines.response_done()

    def connection_lost(self, exc: Exception | None) -> None:
        self.deadlines.cancel()
        super().connection_lost(exc)  # type: ignore[misc]


class TimedH11Protocol(_WithDeadlines, H11Protocol):
    pass


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools missing: uvicorn itself would use h11
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

if HttpToolsProtocol is not None:
    class TimedHttpToolsProtocol(_WithDeadlines, HttpToolsProtocol):
        pass


def protocol_factory(server: ServerSettings) -> functools.partial[Any]:
    """uvicorn's `http` argument: the parser uvicorn's "auto" would pick, with the deadlines. A partial
    of a module-level class, so it pickles into `--workers` processes."""
    timeouts = {"header_timeout_s": server.header_timeout_s, "body_timeout_s": server.body_timeout_s}
    if HttpToolsProtocol is not None:
        return functools.partial(TimedHttpToolsProtocol, **timeouts)
    return functools.partial(TimedH11Protocol, **timeouts)
