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
