"""Clearance in the database: a connection reads as a caller's scope, and console logins.

The policies live in db/sql/80_security.sql. A connection lent for a scoped caller (an API key
limited by clearance or vaults) takes the `ragpg_reader` role and two session settings, so every
statement on it, whatever its filter says, sees only rows that scope may read: the scope is a
separate, non-removable part of each query rather than a clause merged into the caller's filter.
An unrestricted caller (the local CLI, a full-access key) reads as the owner, at no extra cost.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from rag.config import DbSettings
from rag.errors import DatabaseError
from rag.store.database import Connection

if TYPE_CHECKING:
    from rag.access import Scope

READER_ROLE = "ragpg_reader"
EVERY_VAULT = "*"


def scope_settings(scope: Scope) -> tuple[str, str] | None:
    """(`ragpg.clearance`, `ragpg.vaults`) for a scope, or None when it may read everything."""
    if scope.readable_levels() is None and scope.vaults is None:
        return None
    vaults = EVERY_VAULT if scope.vaults is None else json.dumps(list(scope.vaults))
    return scope.clearance, vaults


def apply_read_scope(conn: Connection, scope: Scope) -> bool:
    """Make `conn` read as `scope` until `clear_read_scope`. Returns whether anything was set."""
    settings = scope_settings(scope)
    if settings is None:
        return False
    clearance, vaults = settings
    try:
        conn.execute("select set_config('role', %s, false), set_config('ragpg.clearance', %s, false), "
                     "set_config('ragpg.vaults', %s, false)", (READER_ROLE, clearance, vaults))
    except psycopg.errors.InvalidParameterValue:  # the role does not exist here
        raise DatabaseError(f"this database has no role {READER_ROLE}: run `ragpg db upgrade` as a role "
                            "with CREATEROLE, so scoped requests can be answered") from None
    except psycopg.errors.InsufficientPrivilege:
        raise DatabaseError(f"the database login cannot take role {READER_ROLE}: grant it "
                            f"(`grant {READER_ROLE} to <login>`)") from None
    return True


def clear_read_scope(conn: Connection) -> None:
    """Back to the login's own role and no scope settings (before the pool lends it again)."""
    conn.execute("reset role; reset ragpg.clearance; reset ragpg.vaults")


@dataclass(frozen=True)
class ConsoleLogin:
    """A login role bound by a clearance and vaults, and how to connect as it."""

    role: str
    password: str
    conninfo: str  # without the password (pass it as PGPASSWORD)
    valid_until: datetime


def console_login(conn: Connection, url: str, clearance: str, vaults: list[str] | None,
                  valid_h: float, limits: DbSettings | None = None) -> ConsoleLogin:
    """Make (or refresh) the console role for `clearance` and `vaults`, with a new password and the
    resource limits of `limits` (the db settings; their defaults when None)."""
    password = secrets.token_urlsafe(24)
    valid_until = datetime.now(UTC) + timedelta(hours=valid_h)
    try:
        with conn.transaction():
            row = conn.execute("select ragpg_ensure_console_role(%s, %s) as role", (clearance, vaults)).fetchone()
            assert row is not None  # a select without from returns one row
            role = row["role"]
            conn.execute(sql.SQL("alter role {} password {} valid until {}").format(
                sql.Identifier(role), sql.Literal(password), sql.Literal(valid_until.isoformat())))
            _limit_console_role(conn, role, limits or DbSettings())
            _refuse_open_write_paths(conn, role)
    except psycopg.errors.InsufficientPrivilege as e:
        if e.diag.message_primary and "temp_file_limit" in e.diag.message_primary:
            raise DatabaseError("limiting a console login's temporary files needs a superuser: run `ragpg db "
                                "console` as one, or have one run `grant set on parameter temp_file_limit to "
                                "<owner>`") from None
        raise DatabaseError("making a console role needs CREATEROLE: run this as the database owner") from None
    return ConsoleLogin(role, password, console_conninfo(url, role), valid_until)


def _limit_console_role(conn: Connection, role: str, limits: DbSettings) -> None:
    """The role's connection limit and its sessions' defaults. temp_file_limit only a superuser may
    change, so the login cannot lift it; statement_timeout and work_mem it can (docs/security.md)."""
    who = sql.Identifier(role)
    conn.execute(sql.SQL("alter role {} connection limit {}").format(who, sql.Literal(limits.console_connection_limit)))
    for name, value in (("statement_timeout", f"{round(limits.console_statement_timeout_s * 1000)}ms"),
                        ("work_mem", f"{limits.console_work_mem_mb}MB"),
                        ("temp_file_limit", f"{limits.console_temp_file_limit_mb}MB")):
        conn.execute(sql.SQL("alter role {} set {} = {}").format(who, sql.Identifier(name), sql.Literal(value)))


def _refuse_open_write_paths(conn: Connection, role: str) -> None:
    """Fail closed: no login while it could store data that outlives it or hold an index run's lock."""
    row = conn.execute("select ragpg_console_write_paths(%s) as paths", (role,)).fetchone()
    paths = list(row["paths"]) if row else []
    if paths:
        raise DatabaseError(f"a console login could still use {', '.join(paths)}: have a superuser run "
                            "`ragpg db upgrade` (it takes them from PUBLIC), then run this again")


# What of the owner's connection string a console login may carry: where the server is and how to
# reach it safely. Never the owner's user, password, password file, client key, options or service.
CONSOLE_CONNINFO_KEYS = ("host", "hostaddr", "port", "dbname", "sslmode", "sslrootcert", "connect_timeout")


def console_conninfo(url: str, role: str) -> str:
    """How `role` connects to the server `url` points at (without its password: pass it as PGPASSWORD)."""
    params = {k: v for k, v in conninfo_to_dict(url).items() if k in CONSOLE_CONNINFO_KEYS}
    return make_conninfo("", **params, user=role)


def console_roles(conn: Connection) -> list[str]:
    """The login roles `ragpg db console` made (recorded in ragpg_console_roles), by name."""
    return [str(r["role_name"]) for r in conn.execute("select role_name from ragpg_console_roles order by 1")]
