"""Issue 29: a console login needs its password, and only while it is valid; the owner's own way in
(and its connection string) stays the owner's.

The embedded server's pg_hba.conf trusts the owner over the data dir's private socket and asks every
other role for its scram-sha-256 password; an older cluster's file is rewritten when ragpg starts or
adopts its server.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from rag.store.database import open_connection
from rag.store.embedded import EmbeddedServer
from rag.store.row_security import console_login
from tests.ingest_db.test_row_security import console_conn, indexed  # noqa: F401

pytestmark = pytest.mark.security

TRUST_ALL = "local all all trust\nlocal replication all trust\n"


def login(cli) -> dict[str, str]:
    code, out, err = cli("db", "console", "--clearance", "public", "--json", "--with-password")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.usefixtures("indexed")
def test_a_console_login_needs_its_password_while_it_is_valid(cli, aconn: psycopg.Connection, db_url: str) -> None:
    found = login(cli)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(found["conninfo"], password="not-" + found["password"]).close()
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(found["conninfo"]).close()  # none at all
    with psycopg.connect(found["conninfo"], password=found["password"]) as conn:
        assert conn.execute("select current_user").fetchone()[0] == found["role"]

    aconn.execute(psycopg.sql.SQL("alter role {} valid until '2001-01-01'").format(psycopg.sql.Identifier(found["role"])))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(found["conninfo"], password=found["password"]).close()

    with psycopg.connect(db_url) as owner:  # the owner, as ever: no password over its socket
        assert owner.execute("select count(*) from documents").fetchone()[0] > 0


def test_the_console_connection_string_carries_nothing_of_the_owner(db_url: str) -> None:
    owner_url = (db_url + ("&" if "?" in db_url else "?")
                 + "password=owner-s3cret&options=-c%20role%3Dpostgres&passfile=/home/owner/.pgpass"
                 + "&sslkey=/home/owner/key.pem&application_name=owner-app")
    with open_connection(db_url, autocommit=True) as conn:
        made = console_login(conn, owner_url, "public", None, 1.0)
    params = conninfo_to_dict(made.conninfo)
    owner_params = conninfo_to_dict(db_url)
    assert params["user"] == made.role and params["dbname"] == owner_params["dbname"]
    assert set(params) <= {"user", "dbname", "host", "hostaddr", "port", "sslmode", "sslrootcert", "connect_timeout"}
    for secret in ("owner-s3cret", "role=postgres", ".pgpass", "key.pem", "owner-app"):
        assert secret not in made.conninfo


@pytest.fixture
def own_server() -> Iterator[EmbeddedServer]:
    server = EmbeddedServer(Path(tempfile.mkdtemp(prefix="ragpg-hba-", dir="/tmp")), bm25_library=False)
    yield server
    server.stop()
    shutil.rmtree(server.data_dir, ignore_errors=True)


def stranger_gets_in(server: EmbeddedServer) -> bool:
    """Whether a role with a password gets in without giving it."""
    url = server.url()
    try:
        with psycopg.connect(url.replace("postgresql://postgres@", "postgresql://ragpg_test_stranger@", 1)):
            return True
    except psycopg.OperationalError as exc:
        assert "password" in str(exc)
        return False


def test_an_older_clusters_pg_hba_is_rewritten_at_start_and_on_adoption(own_server: EmbeddedServer) -> None:
    status = own_server.start()
    with psycopg.connect(status.url, autocommit=True) as conn:
        conn.execute("create role ragpg_test_stranger login password 'right'")
    hba = own_server.pgdata / "pg_hba.conf"

    hba.write_text(TRUST_ALL)  # what initdb --auth=trust left in clusters ragpg made before
    with psycopg.connect(status.url, autocommit=True) as conn:
        conn.execute("select pg_reload_conf()")
    assert stranger_gets_in(own_server)
    adopted = EmbeddedServer(own_server.data_dir, bm25_library=False).start()  # a second process adopts it
    assert adopted.adopted and not stranger_gets_in(own_server)

    own_server.stop()
    hba.write_text(TRUST_ALL)
    restarted = own_server.start()
    assert not stranger_gets_in(own_server)
    with psycopg.connect(restarted.url) as conn:  # the owner still gets in, and its data is there
        assert conn.execute("select count(*) from pg_roles where rolname = 'ragpg_test_stranger'").fetchone()[0] == 1
