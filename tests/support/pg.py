"""Test databases: one embedded server per session, a migrated template, a fresh clone per test."""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from rag.store import migrate
from rag.store.embedded import EmbeddedServer

TEMPLATE_DB = "ragpg_test_template"


def with_database(url: str, dbname: str) -> str:
    """The same server URL pointing at another database."""
    if "://" in url:
        return re.sub(r"(://[^/?]*/)([^?]*)", lambda m: m.group(1) + dbname, url, count=1)
    return f"{url} dbname={dbname}"


class TestServer:
    """Either the session's embedded server or RAGPG_TEST_DATABASE_URL's server."""

    def __init__(self) -> None:
        self.external_url = os.environ.get("RAGPG_TEST_DATABASE_URL")
        self.tmpdir: Path | None = None
        self.server: EmbeddedServer | None = None
        self.admin_url = ""

    def start(self) -> None:
        if self.external_url:
            self.admin_url = self.external_url
        else:
            self.tmpdir = Path(tempfile.mkdtemp(prefix="ragpg-test-", dir="/tmp"))
            self.server = EmbeddedServer(self.tmpdir)
            status = self.server.start()
            assert status.url
            self.admin_url = with_database(status.url, "postgres")
        self._build_template()

    def _build_template(self) -> None:
        self.drop_database(TEMPLATE_DB)
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(TEMPLATE_DB)))
        migrate.upgrade(with_database(self.admin_url, TEMPLATE_DB))

    def create_database(self, prefix: str = "t") -> str:
        name = f"ragpg_{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DB)))
        return name

    def create_empty_database(self, prefix: str = "e") -> str:
        name = f"ragpg_{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))

    def url(self, dbname: str) -> str:
        return with_database(self.admin_url, dbname)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.tmpdir is not None:
            import shutil

            shutil.rmtree(self.tmpdir, ignore_errors=True)
