"""Which Host and Origin a request may carry: the defence against DNS rebinding and cross-site calls.

A page on evil.example can point its own name at 127.0.0.1 once the browser has loaded it (DNS
rebinding) and then read http://evil.example:8000/v1/... as its own origin: the request reaches
ragpg on loopback, keyless, at full clearance, with `Host: evil.example:8000`. So the server answers
only the Host names it is bound to: the loopback names (127.0.0.1, localhost, [::1]) with the bound
port, the bound address itself when it is a specific one, and `server.allowed_hosts` (the names a
proxy or docker-compose's other services use). Any other Host, or none, is a 421 before any handler
or key check runs.

A browser says where a request comes from: a request whose `Origin` is not the server's own (same
scheme-less host and port as its Host) is a 403 unless `server.allowed_origins` lists it, and only
listed origins get CORS headers. Without an Origin, `Sec-Fetch-Site: cross-site` (or same-site, a
page on another port) on anything but a top-level navigation is a 403 too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ragpg_server.errors import REQUEST_ID_HEADER, error_body

LOOPBACK_HOST_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "[::]"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_SHOWN_CHARS = 100


def split_host(value: str) -> tuple[str, int | None] | None:
    """("name", port or None) of a Host header value or an allowed_hosts entry, the name lower-cased;
    None when it is not a plain host[:port] (userinfo, a path, a bad port)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text_ = value.partition(":")
        port_text = port_text_ if colon else None
    if not name or any(c in name for c in "/@?#\\ \t"):
        return None
    if port_text is None:
        return name, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def _bound_name(host: str) -> str:
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class HostPolicy:
    any_port: frozenset[str]  # allowed_hosts entries without a port
    with_port: frozenset[tuple[str, int]]

    @classmethod
    def for_bind(cls, host: str, port: int, allowed_hosts: Sequence[str]) -> HostPolicy:
        # Loopback names are allowed whatever the bind: only a client on this machine (or a page
        # served by this server) sends them, never a rebinding page, whose Host is its own domain.
        pairs = {(name, port) for name in LOOPBACK_HOST_NAMES}
        bound = _bound_name(host)
        if bound not in _WILDCARD_BINDS:
            pairs.add((bound, port))
        any_port: set[str] = set()
        for entry in allowed_hosts:
            parsed = split_host(entry)
            if parsed is None:
                continue  # rag.config's pattern lets none through
            name, entry_port = parsed
            if entry_port is None:
                any_port.add(name)
            else:
                pairs.add((name, entry_port))
        return cls(frozenset(any_port), frozenset(pairs))

    def allows(self, host_header: str | None, scheme: str) -> bool:
        parsed = split_host(host_header) if host_header else None
        if parsed is None:
            return False
        name, port = parsed
        if name in self.any_port:
            return True
        return (name, port if port is not None else _DEFAULT_PORTS.get(scheme, 80)) in self.with_port


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [bytes(value).decode("latin-1") for key, value in scope.get("headers") or () if key == name]


def _header(scope: Scope, name: bytes) -> str | None:
    """The header's value; None when it is absent or given more than once (nothing to trust)."""
    values = _headers(scope, name)
    return values[0] if len(values) == 1 else None


def _shown(value: str | None) -> str:
    if value is None:
        return "none"
    text = value[:_SHOWN_CHARS]
    return text if text.isprintable() else ascii(text)


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]
    rid = (scope.get("state") or {}).get("request_id")
    if rid:
        headers.append((REQUEST_ID_HEADER.lower().encode(), rid.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HostCheckMiddleware:
    """421 Misdirected Request for a Host the server is not bound to (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if self.policy.allows(host, scope.get("scheme", "http")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _refuse(scope, send, 421, "misdirected_request",
                      f"this server does not answer to the host name {_shown(host)}: use the address it "
                      "listens on (127.0.0.1 or localhost and its port), or add the name to server.allowed_hosts")


def same_origin(origin: str, host_header: str | None) -> bool:
    """An Origin naming the request's own host and port (http or https: a TLS proxy may sit in front)."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or parts.path or parts.query or not host_header:
        return False
    own, theirs = split_host(host_header), split_host(parts.netloc)
    if own is None or theirs is None or own[0] != theirs[0]:
        return False
    default = _DEFAULT_PORTS[parts.scheme]
    return (own[1] or default) == (theirs[1] or default)


class OriginCheckMiddleware:
    """403 for a browser request from another origin than the server's own or `allowed_origins`."""

    def __init__(self, app: ASGIApp, allowed_origins: Sequence[str]) -> None:
        self.app = app
        self.allowed = frozenset(o.lower() for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origins = _headers(scope, b"origin")
        origin = origins[0] if origins else None
        if origins:  # more than one is nobody's own origin
            ok = len(origins) == 1 and (origins[0].lower() in self.allowed
                                        or same_origin(origins[0], _header(scope, b"host")))
        else:  # no Origin: a browser still says whether another site made the request
            sites, modes = _headers(scope, b"sec-fetch-site"), _headers(scope, b"sec-fetch-mode")
            ok = not {"cross-site", "same-site"} & set(sites) or modes == ["navigate"]
        if ok:
            await self.app(scope, receive, send)
            return
        where = f"origin {_shown(origin)}" if origin is not None else "another site"
        await _refuse(scope, send, 403, "cross_origin_refused",
                      f"requests from {where} are refused: only this server's own page may call it from a "
                      "browser, unless server.allowed_origins lists the origin")
