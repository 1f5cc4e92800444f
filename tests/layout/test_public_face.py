"""The public face (`rag/__init__.py`): every exported name resolves, and `import rag` alone
loads none of the stages (the CLI and the server import only what a command needs)."""

from __future__ import annotations

import subprocess
import sys

import rag


def test_every_public_name_resolves() -> None:
    for name in rag.__all__:
        assert getattr(rag, name) is not None, name
    assert rag.index.__name__ == "index_vaults"
    assert issubclass(rag.NotFoundError, rag.InputError) and issubclass(rag.InputError, rag.RagError)


def test_import_rag_is_cheap() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, rag; print(sorted(m for m in sys.modules "
                          "if m.startswith('rag.')))"], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_cli_and_ask_start_without_the_migration_stack() -> None:
    """alembic and SQLAlchemy serve `ragpg db upgrade` and the embedded server's first start only;
    loaded by every command they were a quarter second of each `ragpg ask`."""
    code = ("import sys, ragpg_cli.main, rag.notes.ask, rag.compute; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'sqlalchemy')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
