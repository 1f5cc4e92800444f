""""The vault must exist" is one rule with one message, whichever door a name comes through: the
library's entry points, the filter compiled in SQL, the store's own functions and the CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rag import ask, compute_context, search
from rag.config import Settings
from rag.errors import NotFoundError
from rag.retrieval.retrieve import match_folders
from rag.retrieval.stage import indexed_model
from rag.runtime import Runtime
from rag.store import vaults
from tests.ingest_db.helpers import add, index
from tests.support.files import write_files

MESSAGE = "unknown vault 'nope' (known: alpha, beta)"


@pytest.fixture
def runtime(settings: Settings, aconn: psycopg.Connection, tmp_path: Path) -> Any:
    for name in ("alpha", "beta"):
        add(aconn, name, write_files(tmp_path / name, {"garden.md": "# Garden\n\nTomatoes need sun.\n"}))
    assert not index(settings).failed
    rt = Runtime.from_settings(settings, pool_max_size=2)
    yield rt
    rt.close()


def test_every_door_says_the_same(runtime: Runtime, aconn: psycopg.Connection, cli: Callable[..., Any]) -> None:
    model = indexed_model(aconn, runtime)
    doors: dict[str, Callable[[], object]] = {
        "compute_context": lambda: compute_context("tomatoes", vaults=["alpha", "nope"], runtime=runtime),
        "compute_context filter": lambda: compute_context("tomatoes", filters={"vault": "nope"}, runtime=runtime),
        "ask": lambda: ask("tomatoes?", vaults=["nope"], runtime=runtime),
        "search": lambda: search("tomatoes", vaults=["nope"], runtime=runtime),
        "match_folders": lambda: match_folders(aconn, model, runtime.embedder.embed_query("x"), vaults=["nope"]),
        "get_vault": lambda: vaults.get_vault(aconn, "nope"),
        "remove_vault": lambda: vaults.remove_vault(aconn, "nope"),
        "resolve_vault_names": lambda: vaults.resolve_vault_names(aconn, ["nope"]),
    }
    for door, call in doors.items():
        with pytest.raises(NotFoundError) as err:
            call()
        assert str(err.value) == MESSAGE, door
    for args in (("index", "nope"), ("keys", "create", "k", "--vault", "nope"),
                 ("db", "console", "--json", "--clearance", "public", "--vault", "nope")):
        code, out, err = cli(*args)
        assert (code, out, err.strip()) == (4, "", f"error: {MESSAGE}"), args
    assert vaults.vault_names(aconn) == ["alpha", "beta"]  # nothing removed or added on the way


def test_a_name_no_vault_can_have_is_named_on_one_line(runtime: Runtime, aconn: psycopg.Connection,
                                                       cli: Callable[..., Any]) -> None:
    """A hostile name (line breaks, control characters, any length) is JSON-quoted and bounded in the
    message, at every door: a log line or a terminal line cannot be forged through a vault name."""
    hostile = "nope\nerror: forged line\r\x1b[31m"
    label = '"nope\\nerror: forged line\\r\\u001b[31m"'
    doors: dict[str, Callable[[], object]] = {
        "compute_context": lambda: compute_context("tomatoes", vaults=[hostile], runtime=runtime),
        "compute_context filter": lambda: compute_context("tomatoes", filters={"vault": hostile}, runtime=runtime),
        "search": lambda: search("tomatoes", vaults=[hostile], runtime=runtime),
        "get_vault": lambda: vaults.get_vault(aconn, hostile),
    }
    for door, call in doors.items():
        with pytest.raises(NotFoundError) as err:
            call()
        assert str(err.value) == f"unknown vault {label} (known: alpha, beta)", door
    code, out, err = cli("search", "tomatoes", "--vault", hostile)
    assert (code, out, err.splitlines()) == (4, "", [f"error: unknown vault {label} (known: alpha, beta)"])
    assert vaults.vault_names(aconn) == ["alpha", "beta"]


@pytest.mark.parametrize("name", ["nope", "it's", "back\\slash", "tab\there", "x" * 60, "x" * 61, "é" * 70,
                                  "line\u2028sep", "c1\x85ctl", "del\x7f", "bell\x07", "ünïcode ok", ""])
def test_sql_and_python_word_a_vault_name_alike(aconn: psycopg.Connection, name: str) -> None:
    row = aconn.execute("select ragpg_vault_label(%s) as label", (name,)).fetchone()
    assert row is not None and row["label"] == vaults.vault_label(name)
    assert len(vaults.vault_label(name).splitlines()) <= 1
