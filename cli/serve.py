"""`ragpg serve`: the HTTP server (FastAPI under uvicorn)."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from rag.errors import ConfigError, RagError
from rag.store import keys as key_store
from rag.store.database import open_connection
from rag.store.locate import resolve_database_url
from ragpg_cli.app import info, state

# A spawned worker imports the whole app before it answers the supervisor's ping; on a busy host
# that can take longer than uvicorn's default 5 s, and the supervisor would kill and respawn it.
WORKER_HEALTHCHECK_S = 30
NO_KEYS_NOTICE = "no API keys configured: serving on loopback only, without authentication"


def auth_line(mode: str, keyless: bool, active_keys: bool) -> str:
    """The one line `ragpg serve` prints about authentication."""
    if keyless and mode == "keyless":
        return ("auth: keyless (server.auth = keyless): loopback callers without a key get full access; "
                "keys still apply when sent")
    if keyless:
        return (f"auth: keyless until the first key is created — {NO_KEYS_NOTICE}; "
                "`ragpg keys create` turns keys on for good")
    tail = "" if active_keys else " — no active key exists, so every request will be refused (401)"
    return f"auth: API key required on every request (server.auth = {mode}){tail}"


def _is_loopback_host(host: str) -> bool:
    from ragpg_server.auth import is_loopback

    return is_loopback(host)


def serve(ctx: typer.Context,
          host: str | None = typer.Option(None, "--host", help="Interface to bind (default: server.host, 127.0.0.1). "
                                          "Requests must name it, or localhost, or a server.allowed_hosts name, "
                                          "in their Host header (else 421)."),
          port: int | None = typer.Option(None, "--port", min=1, max=65535,
                                          help="Port (default: server.port, 8000)."),
          workers: int = typer.Option(1, "--workers", min=1, max=64,
                                      help="Worker processes; each has its own pool and admission queue."),
          log_level: str = typer.Option("info", "--log-level", help="uvicorn log level.")) -> None:
    """Serve the HTTP API (/v1/context, /v1/ask, /v1/search, /v1/chunks, /v1/vaults, /v1/index, /healthz).

    Before any handler or key check, a request whose Host is not a name of this server (127.0.0.1, localhost or [::1] with its port, the bound address, server.allowed_hosts) gets 421, and one from another web origin gets 403 unless server.allowed_origins lists it: a web page cannot reach the API through DNS rebinding.

    Clients slower than server.header_timeout_s (headers) or server.body_timeout_s (body) get 408 and are disconnected.
    """  # one line per paragraph: typer keeps a docstring's line breaks in --help
    from rag.extras import require_extra

    require_extra("server", "ragpg serve")
    import uvicorn

    st = state(ctx)
    host = host or st.settings.server.host
    port = port or st.settings.server.port
    # The app answers only the Host names of the address it is bound to (ragpg_server.hosts), so it
    # must know the address --host/--port chose; workers read it from the environment.
    settings = st.settings.model_copy(update={"server": st.settings.server.model_copy(update={"host": host,
                                                                                              "port": port})})
    url = resolve_database_url(settings)  # starts the embedded server when DATABASE_URL is unset
    from rag.store import migrate  # alembic + SQLAlchemy: loaded only by the commands that need them
    from ragpg_server.auth import keyless_allowed

    mode = settings.server.auth
    with open_connection(url) as conn:
        if settings.server.api_key:  # a first key from the environment (docker-compose)
            from rag.key_bootstrap import ensure_configured_key

            made = ensure_configured_key(conn, settings.server.api_key)
            info(f"API key '{made.name}' from server.api_key " + ("created" if made.created else "present"))
        active = key_store.any_active_keys(conn)
        keyless = keyless_allowed(conn, mode)
        revision = migrate.current_revision(conn)
    if keyless and not _is_loopback_host(host):
        reason = "server.auth = keyless" if mode == "keyless" else "no API keys configured"
        raise ConfigError(f"{reason}: refusing to serve on {host} without authentication; "
                          "create a key with `ragpg keys create` or bind to 127.0.0.1")
    head = migrate.head_revision()
    if revision != head:
        info(f"warning: database schema at revision {revision}, expected {head}; run `ragpg db upgrade` "
             "(/healthz reports 503 until then)")
    check_address_free(host, port)
    info(auth_line(mode, keyless, active))
    info(f"ragpg serving on http://{host}:{port} (docs at /docs; {workers} worker{'s' if workers > 1 else ''}, "
         f"concurrency {settings.server.concurrency}, queue {settings.server.queue_size} per worker)")

    from ragpg_server.protocol import protocol_factory

    # uvicorn's parser with header and body deadlines (Slowloris); uvicorn types `http` as a class or a
    # name, and a partial of the class is what it calls.
    http: Any = protocol_factory(settings.server)
    if workers == 1:
        from rag.runtime import Runtime
        from ragpg_server.app import create_app, pool_size_for

        runtime = Runtime.from_settings(settings, pool_max_size=pool_size_for(settings.server.concurrency))
        with _startup_failure_is_not_exit_3():
            uvicorn.run(create_app(runtime, lifespan_close=True), host=host, port=port, log_level=log_level,
                        http=http)
        return
    # Each worker process builds its own settings and runtime (server.app.create_app_from_env); they
    # share this process's resolved database URL and config file through the environment.
    os.environ["RAGPG_DATABASE_URL"] = url
    os.environ["RAGPG_SERVER__HOST"], os.environ["RAGPG_SERVER__PORT"] = host, str(port)
    if st.config_path is not None:
        os.environ["RAGPG_CONFIG"] = str(st.config_path)
    with _startup_failure_is_not_exit_3():
        uvicorn.run("ragpg_server.app:create_app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level=log_level, timeout_worker_healthcheck=WORKER_HEALTHCHECK_S, http=http)


def check_address_free(host: str, port: int) -> None:
    """Bind the address once as uvicorn will (IPv6 when the host has a ':', SO_REUSEADDR so a port in
    TIME_WAIT counts as free), so a port in use is reported before "serving" is."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        why = ("the address is already in use (another server? pick another --port)"
               if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc))
        raise RagError(f"cannot listen on {host}:{port}: {why}") from None


@contextmanager
def _startup_failure_is_not_exit_3() -> Iterator[None]:
    """uvicorn exits 3 when it cannot start (an address taken since the check, an app that fails to
    start): for ragpg, 3 means the database is unreachable, so this is a runtime failure (1)."""
    try:
        yield
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise RagError("the HTTP server could not start (the lines above say why)") from None
