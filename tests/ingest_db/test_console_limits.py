"""Issue 47: a console login is bounded (statement time, temporary files, memory, sessions) and has no
way to write: a red-team pass ran a 3M-row sort unbounded and stored a large object as a read-only login.

Each limit and each closed path is tried as the console role itself, over its own password login.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from rag.config import DbSettings
from rag.errors import DatabaseError
from rag.store.row_security import ConsoleLogin, console_login
from tests.ingest_db.test_row_security import console_conn, indexed  # noqa: F401

pytestmark = pytest.mark.security

WRITES = (
    "select lo_create(0)",
    "select lo_creat(-1)",
    "select lo_from_bytea(0, 'kept after logout')",
    "create temporary table kept (x int)",
    "create table public.kept (x int)",
    "create schema kept",
    # an index run's vault lock is an advisory lock: a console login holding it stalled every run
    "select pg_advisory_lock(1)",
    "select pg_try_advisory_lock(1, 2)",
)


def login_with(db_url: str, **limits: float) -> ConsoleLogin:
    with psycopg.connect(db_url, autocommit=True, row_factory=dict_row) as owner:
        return console_login(owner, db_url, "public", None, 1.0, DbSettings(**limits))


def connect(login: ConsoleLogin) -> psycopg.Connection:
    return psycopg.connect(login.conninfo, password=login.password, autocommit=True, row_factory=dict_row)


@pytest.mark.usefixtures("indexed")
def test_a_console_login_starts_with_the_configured_limits(cli, aconn: psycopg.Connection) -> None:
    defaults = DbSettings()
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        shown = {r["name"]: int(r["setting"]) for r in conn.execute(  # in ms and kB
            "select name, setting from pg_settings where name in ('statement_timeout', 'temp_file_limit', 'work_mem')")}
        assert shown == {"statement_timeout": round(defaults.console_statement_timeout_s * 1000),
                         "temp_file_limit": defaults.console_temp_file_limit_mb * 1024,
                         "work_mem": defaults.console_work_mem_mb * 1024}
        role = conn.execute("select current_user as r").fetchone()["r"]
        # only a superuser may lift the temporary-file limit
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="temp_file_limit"):
            conn.execute("set temp_file_limit = -1")
        for lift in ("alter role current_user connection limit -1", "alter role current_user set temp_file_limit = -1"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(lift)
    limit = aconn.execute("select rolconnlimit from pg_roles where rolname = %s", (role,)).fetchone()["rolconnlimit"]
    assert limit == defaults.console_connection_limit


def test_a_long_statement_is_cancelled(db_url: str) -> None:
    with connect(login_with(db_url, console_statement_timeout_s=0.2)) as conn:
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            conn.execute("select pg_sleep(30)")


def test_a_large_sort_stops_at_the_temporary_file_limit(db_url: str) -> None:
    with connect(login_with(db_url, console_temp_file_limit_mb=1, console_work_mem_mb=1)) as conn:
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="temp_file_limit"):
            conn.execute("select md5(i::text) as h from generate_series(1, 400000) i order by 1 desc limit 1")


def test_a_login_holds_at_most_its_connection_limit(db_url: str) -> None:
    login = login_with(db_url, console_connection_limit=1)
    with connect(login) as first:
        assert first.execute("select 1 as one").fetchone()["one"] == 1
        with pytest.raises(psycopg.OperationalError, match="too many connections for role"):
            connect(login).close()


@pytest.mark.usefixtures("indexed")
def test_a_console_login_has_no_write_path(cli) -> None:
    with console_conn(cli, "--clearance", "restricted") as conn:
        for attempt in WRITES:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(attempt)
        assert conn.execute("select count(*) as n from pg_largeobject_metadata").fetchone()["n"] == 0


def test_grants_given_back_to_public_are_taken_again_by_the_next_login(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as owner:
        owner.execute(sql.SQL("grant temporary on database {} to public").format(
            sql.Identifier(owner.info.dbname)))
        owner.execute("grant execute on function lo_create(oid) to public")
    with connect(login_with(db_url)) as conn:
        for attempt in ("select lo_create(0)", "create temporary table kept (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(attempt)


def test_a_login_that_could_still_write_is_refused(db_url: str) -> None:
    """Fail closed: where the paths cannot be closed (no superuser), no login is made."""
    with psycopg.connect(db_url, autocommit=True, row_factory=dict_row) as owner:
        owner.execute("grant execute on function lo_create(oid) to public")
        # as the closing step could not run (a login that is not a superuser)
        owner.execute("alter function ragpg_close_console_write_paths() rename to ragpg_close_saved")
        owner.execute("create function ragpg_close_console_write_paths() returns void language sql as ''")
        try:
            with pytest.raises(DatabaseError, match=r"large objects \(lo_create\).*ragpg db upgrade"):
                console_login(owner, db_url, "internal", None, 1.0)
            assert owner.execute("select count(*) as n from ragpg_console_roles where clearance = 'internal'"
                                 ).fetchone()["n"] == 0
        finally:
            owner.execute("drop function ragpg_close_console_write_paths()")
            owner.execute("alter function ragpg_close_saved() rename to ragpg_close_console_write_paths")
