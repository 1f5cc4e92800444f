"""A non-editable `pip install .` carries the SQL and migrations: `ragpg db upgrade` works from it.

The repository's folders install under the project's names only (db/ as rag.db, server/ as
ragpg_server, cli/ as ragpg_cli): nothing named `server` or `db` lands in site-packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import psycopg

from rag.store.migrate import head_revision
from tests.support.cli import subprocess_env

REPO = Path(__file__).resolve().parents[2]


def test_pip_install_then_db_upgrade(tmp_path, pg_server):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # The package itself is built and installed for real; its dependencies are borrowed from the
    # running environment (no network needed), placed after the new venv's own site-packages.
    # Built from a copy of the sources: setuptools reuses the checkout's build/ folder, where files
    # that have since moved or gone would still sit and mask a packaging mistake.
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"))
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(source)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=300)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz_borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    where = subprocess.run([str(py), "-c", "import rag, rag.db, ragpg_server.app, ragpg_cli.main as m\n"
                            "for x in (rag, rag.db, ragpg_server.app, m): print(x.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path).stdout.split()
    assert len(where) == 4 and all(w.startswith(str(site)) for w in where), where
    assert (site / "rag" / "db" / "sql" / "10_embedding_models.sql").exists()
    assert list((site / "rag" / "db" / "migrations" / "versions").glob("0001_*.py"))
    assert (site / "rag" / "py.typed").exists()
    for generic in ("server", "db", "cli"):
        assert not (site / generic).exists(), generic
        gone = subprocess.run([str(py), "-c", f"import {generic}"], capture_output=True, text=True, cwd=tmp_path)
        assert gone.returncode != 0 and "ModuleNotFoundError" in gone.stderr, (generic, gone.stderr)
    for page_file in ("index.html", "app.js", "style.css", "favicon.svg"):  # the web page ships in the wheel
        assert (site / "ragpg_server" / "static" / page_file).is_file(), page_file

    name = pg_server.create_empty_database("wheel")
    url = pg_server.url(name)
    env = subprocess_env({"DATABASE_URL": url})
    out = subprocess.run([str(venv / "bin" / "ragpg"), "db", "upgrade"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute("select version_num from alembic_version").fetchone()[0] == head_revision()
        assert conn.execute("select ragpg_sql_name('a', 'B-c')").fetchone()[0] == "a_b_c"
    pg_server.drop_database(name)
