"""Who is calling: an API key (`Authorization: Bearer <key>` or `X-API-Key: <key>`) → a Scope.

`server.auth` decides whether a request without a key may pass (`keyless_allowed`): in the default
`auto` mode only until the first key was ever created (revoking every key later does not reopen
the server); `keys` never; `keyless` always. A keyless caller must be on loopback (`ragpg serve`
also refuses other hosts then) and gets an unrestricted scope.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.access import Scope
from rag.errors import AuthError
from rag.store import keys as key_store
from rag.store.database import Connection
from ragpg_server.errors import ForbiddenError, Unauthorized

LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True)
class Principal:
    scope: Scope
    key_name: str | None  # None: no keys configured, loopback caller

    @property
    def authenticated(self) -> bool:
        return self.key_name is not None


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key the request carries, or None; a malformed Authorization header is a 401."""
    auth = headers.get("authorization")
    if auth is not None:
        scheme, _, token = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("malformed Authorization header (use 'Authorization: Bearer <key>')")
        return token.strip()
    api_key = headers.get("x-api-key")
    if api_key is not None:
        if not api_key.strip():
            raise Unauthorized("empty X-API-Key header")
        return api_key.strip()
    return None


def keyless_allowed(conn: Connection, mode: str) -> bool:
    if mode == "keyless":
        return True
    return mode == "auto" and not key_store.any_keys_ever(conn)


def resolve_principal(conn: Connection, key: str | None, client_host: str | None,
                      mode: str = "auto", touch_interval_s: float = 0.0) -> Principal:
    if key is None and keyless_allowed(conn, mode):
        if not is_loopback(client_host):
            raise Unauthorized("no API keys are configured: unauthenticated access is allowed from loopback only")
        return Principal(scope=Scope.unrestricted(), key_name=None)
    try:
        api_key = key_store.authenticate(conn, key, touch_interval_s=touch_interval_s)
    except AuthError as exc:
        raise Unauthorized(str(exc)) from None
    return Principal(scope=api_key.scope, key_name=api_key.name)


def authorize_vaults(scope: Scope, requested: Sequence[str] | None) -> None:
    """A request naming a vault outside the key's scope is refused (403) before any work."""
    try:
        scope.check_vaults(list(requested) if requested else None)
    except AuthError as exc:
        raise ForbiddenError(str(exc)) from None
