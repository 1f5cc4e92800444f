"""Alembic environment: runs on the connection ragpg hands over, or on DATABASE_URL from a checkout."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

config = context.config


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from rag.config import load_settings
    from rag.store.locate import resolve_database_url

    return resolve_database_url(load_settings())


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    from rag.store.database import sqlalchemy_url

    engine = create_engine(sqlalchemy_url(_url()), poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("ragpg migrations run online only: use `ragpg db upgrade`.")
run_migrations_online()
