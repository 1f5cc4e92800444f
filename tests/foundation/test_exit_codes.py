"""One table of exit codes (cli/exit_codes.py): the README shows it, `ragpg --help` shows it, it holds
the code of every error class in rag/errors.py, and cli/main.py returns exactly those codes."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest

import rag.errors
from rag.errors import RagError
from ragpg_cli.exit_codes import DEGRADED, EXIT_CODES, INTERRUPTED, help_epilog
from ragpg_cli.main import app, main
from tests.support.cli import REPO, ragpg


def _readme_rows() -> list[tuple[str, ...]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Errors and exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
            for line in section.splitlines() if line.startswith("| ")]
    return [r for r in rows if r[0] != "code"]


def test_the_readme_table_is_the_table() -> None:
    assert _readme_rows() == [(str(c.code), c.meaning, c.examples) for c in EXIT_CODES]


def test_every_error_class_has_its_code_in_the_table() -> None:
    classes = [cls for _, cls in inspect.getmembers(rag.errors, inspect.isclass) if issubclass(cls, RagError)]
    assert len(classes) >= 10
    codes = {c.code for c in EXIT_CODES}
    assert {cls.__name__: cls.exit_code for cls in classes if cls.exit_code not in codes} == {}
    assert all(c.error is None or c.error.exit_code == c.code for c in EXIT_CODES)
    assert len(codes) == len(EXIT_CODES)  # one meaning per code


def test_eval_degraded_is_the_table_code() -> None:
    from rag.eval.errors import EvalExit

    assert EvalExit.DEGRADED == DEGRADED and DEGRADED not in {c.error.exit_code for c in EXIT_CODES if c.error}


def test_help_shows_the_table() -> None:
    done = ragpg("--help", env={"COLUMNS": "100"})
    assert done.returncode == 0
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.stdout).split())
    assert " ".join(help_epilog().split()) in flat


@contextmanager
def _probe(action: Callable[[], None]) -> Iterator[None]:
    """A command `probe` that runs `action`, on the real app, for one test."""
    app.command("probe")(action)
    try:
        yield
    finally:
        app.registered_commands.pop()


def _raise(exc: BaseException) -> Callable[[], None]:
    def action() -> None:
        raise exc
    return action


@pytest.mark.parametrize("entry", [c for c in EXIT_CODES if c.error is not None], ids=lambda c: str(c.code))
def test_the_cli_exits_with_each_error_code(entry, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGPG_CONFIG", "/nonexistent/ragpg.toml")
    assert entry.error is not None
    with _probe(_raise(entry.error("it went wrong"))):
        code = main(["probe"])
    assert code == entry.code and capsys.readouterr().err == "error: it went wrong\n"


@pytest.mark.parametrize(("exc", "expected"), [
    (psycopg.OperationalError("server closed the connection"), rag.errors.DatabaseError.exit_code),
    (KeyboardInterrupt(), INTERRUPTED),
])
def test_the_cli_maps_what_is_not_a_rag_error(exc, expected, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGPG_CONFIG", "/nonexistent/ragpg.toml")
    with _probe(_raise(exc)):
        assert main(["probe"]) == expected
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 1 and "Traceback" not in err


def test_a_usage_error_is_bad_input(capsys) -> None:
    assert main(["vault", "add"]) == rag.errors.InputError.exit_code
