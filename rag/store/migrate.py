"""Schema lifecycle: pgvector check, alembic upgrade/downgrade, re-applying db/sql, schema dumps.

Tables live in alembic revisions (frozen once released); functions, views and triggers live
in db/sql/*.sql as `create or replace` and are re-applied in full after every upgrade.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, pool

from rag.errors import DatabaseError
from rag.store.database import Connection, mask_url, open_connection, sqlalchemy_url

MIN_SERVER_VERSION_NUM = 150000
MIN_PGVECTOR = (0, 7, 0)
# pg_advisory_lock key for schema changes; an arbitrary constant reserved for ragpg.
MIGRATION_LOCK_KEY = 0x2D1C6A7E41B3F905


def _db_package_dir() -> Path:
    """The folder of rag.db's files. Through a file of the package, resolved: the README's editable
    install links each file into a tree of its own (setup.cfg), so a file added to db/ after the
    install is found where it is, not missed in that tree."""
    return Path(str(resources.files("rag.db") / "__init__.py")).resolve().parent


def migrations_dir() -> Path:
    return _db_package_dir() / "migrations"


def sql_files() -> list[Path]:
    return sorted((_db_package_dir() / "sql").glob("*.sql"))


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    exists = conn.execute("select to_regclass('public.alembic_version') is not null as ok").fetchone()
    if not exists or not exists["ok"]:
        return None
    row = conn.execute("select version_num from alembic_version").fetchone()
    return row["version_num"] if row else None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def ensure_pgvector(conn: Connection) -> str:
    """Create the vector extension when allowed; a clear error naming what to do otherwise."""
    found = conn.execute("select current_setting('server_version_num')::int as n").fetchone()
    assert found is not None  # a select without from returns one row
    server: int = found["n"]
    if server < MIN_SERVER_VERSION_NUM:
        raise DatabaseError(f"PostgreSQL {server // 10000} is too old: ragpg needs PostgreSQL 15 or newer")
    row = conn.execute(
        "select default_version, installed_version from pg_available_extensions where name = 'vector'"
    ).fetchone()
    if row is None:
        raise DatabaseError(
            "the pgvector extension is not installed on this PostgreSQL server: install pgvector 0.7+ "
            "(e.g. the pgvector/pgvector Docker image or your distribution's postgresql-NN-pgvector package)"
        )
    if row["installed_version"] is None:
        try:
            conn.execute("create extension if not exists vector")
            conn.commit()
        except psycopg.errors.InsufficientPrivilege:
            conn.rollback()
            raise DatabaseError(
                "not allowed to create the pgvector extension: ask a database owner or superuser to run "
                "`CREATE EXTENSION vector;` in this database, then rerun `ragpg db upgrade`"
            ) from None
    installed = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    assert installed is not None  # created above
    version: str = installed["extversion"]
    if _version_tuple(version) < MIN_PGVECTOR:
        raise DatabaseError(f"pgvector {version} is too old: ragpg needs 0.7 or newer (ALTER EXTENSION vector UPDATE)")
    return version


def apply_sql_files(conn: Connection) -> None:
    """Re-apply every db/sql file in order, then regenerate per-model functions, in one transaction."""
    with conn.transaction():
        for path in sql_files():
            conn.execute(path.read_text())
        conn.execute("select ragpg_refresh_model_functions()")


def _run_alembic(url: str, fn: Callable[[Config, str], None], revision: str) -> None:
    engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        with engine.begin() as sa_conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = sa_conn
            fn(cfg, revision)
    except DatabaseError:
        raise
    except Exception as exc:  # alembic/sqlalchemy wrap driver errors; keep one line
        raise DatabaseError(f"migration failed on {mask_url(url)}: {str(exc).splitlines()[0]}") from None
    finally:
        engine.dispose()


@contextmanager
def _migration_lock(url: str) -> Iterator[None]:
    """Serialise schema changes across processes (two `ragpg db start` at once)."""
    with open_connection(url, autocommit=True, register_vector=False) as lock_conn:
        lock_conn.execute("select pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            yield
        finally:
            lock_conn.execute("select pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def upgrade(url: str, revision: str = "head") -> str:
    """Bring the schema to `revision` (default head) and re-apply db/sql. Returns the revision."""
    with _migration_lock(url):
        with open_connection(url, register_vector=False) as conn:
            ensure_pgvector(conn)
        _run_alembic(url, command.upgrade, revision)
        with open_connection(url, register_vector=False) as conn:
            apply_sql_files(conn)
            return current_revision(conn) or ""


def downgrade(url: str, revision: str = "base") -> None:
    with _migration_lock(url):
        _run_alembic(url, command.downgrade, revision)


def is_current(conn: Connection) -> bool:
    return current_revision(conn) == head_revision()


def migration_context_revision(url: str) -> str | None:
    engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        with engine.connect() as sa_conn:
            return MigrationContext.configure(sa_conn).get_current_revision()
    finally:
        engine.dispose()


def dump_schema(url: str) -> str:
    """A deterministic schema-only dump (pg_dump from the embedded binaries)."""
    from rag.store.embedded import bin_dir

    try:
        out = subprocess.run(
            [str(bin_dir() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
             "--no-comments", "--dbname", url],
            check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        ).stdout
    except subprocess.CalledProcessError as exc:
        raise DatabaseError(f"pg_dump failed: {exc.stderr.strip().splitlines()[-1]}") from None
    kept = [
        line for line in out.splitlines()
        if not line.startswith(("\\restrict", "\\unrestrict", "-- Dumped", "SET ", "SELECT pg_catalog.set_config"))
    ]
    text = "\n".join(kept)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
