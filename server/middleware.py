"""Pure ASGI middleware: the request id (generated or taken from X-Request-ID, echoed back) and the
body-size limit (413 before anything parses the body)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragpg_server.errors import REQUEST_ID_HEADER, error_body

_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_HEADER_BYTES = REQUEST_ID_HEADER.lower().encode()
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value
    return None


def new_request_id() -> str:
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Puts the request id in `scope["state"]["request_id"]` and on every response.

    A caller's X-Request-ID is kept when it is a sane token (≤128 of [A-Za-z0-9._:-]); anything
    else is replaced by a fresh id, so logs and traces never carry attacker-shaped strings.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = _header(scope, _HEADER_BYTES)
        given = raw.decode("latin-1") if raw else ""
        rid = given if _REQUEST_ID_OK.match(given) else new_request_id()
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if not any(k.lower() == _HEADER_BYTES for k, _ in headers):
                    headers.append((_HEADER_BYTES, rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_id)


class BodyLimitMiddleware:
    """Rejects a request body over `max_bytes` with 413 before the app reads or parses it.

    A declared Content-Length over the limit is refused at once; otherwise the body is buffered
    up to the limit (refused as soon as it goes over) and replayed to the app.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, scope: Scope, send: Send, declared: int | None) -> None:
        size = f"is {declared} bytes" if declared is not None else f"is over {self.max_bytes} bytes"
        body = json.dumps(error_body(
            "payload_too_large",
            f"request body {size}; the limit is {self.max_bytes} bytes (server.max_body_bytes)")).encode()
        headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json"),
                                              (b"content-length", str(len(body)).encode()),
                                              (b"connection", b"close")]
        rid = (scope.get("state") or {}).get("request_id")
        if rid:
            headers.append((_HEADER_BYTES, rid.encode()))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        raw_length = _header(scope, b"content-length")
        declared: int | None = None
        if raw_length is not None:
            try:
                declared = int(raw_length)
            except ValueError:
                declared = None
            if declared is not None and declared > self.max_bytes:
                await self._reject(scope, send, declared)
                return
        chunks: list[bytes] = []
        total = 0
        disconnect: Message | None = None
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                disconnect = message
                break
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                await self._reject(scope, send, None)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                if disconnect is not None:
                    return disconnect
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
