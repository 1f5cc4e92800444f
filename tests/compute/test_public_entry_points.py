"""`rag.index` and `rag.related`: the library's faces of indexing and of the link graph take the runtime
as every other entry point does, keyword-only after the first argument, and refuse a bare string as
the vaults the way they all do."""

from __future__ import annotations

import pytest

import rag
from rag.errors import InputError, NotFoundError
from rag.store.vaults import NewVault, add_vault
from tests.compute.conftest import Env
from tests.support.files import write_files

NOTES = {"Projects/Heron.md": "# Heron\n\nThe heron survey starts on the ninth of May.\n",
         "Garden.md": "# Garden\n\nTomatoes want sun and water every morning, as [[Heron|the survey]] notes.\n"}


def chunks(env: Env) -> int:
    n = env.chunk_count()
    env.conn.commit()  # the count's snapshot is not held while indexing writes
    return n


def test_index_with_a_runtime_then_ask(env: Env) -> None:
    add_vault(env.conn, NewVault(name="field", path=write_files(env.root / "field", NOTES)))
    env.conn.commit()
    rt = env.runtime()
    with pytest.raises(InputError, match="'vaults' must be a list of names or None"):
        rag.index("field", runtime=rt)  # type: ignore[arg-type]  (a user's script may still do it)
    assert chunks(env) == 0  # refused before anything was read
    report = rag.index(["field"], runtime=rt)
    assert not report.failed and [v.vault for v in report.vaults] == ["field"]
    assert report.embedding_model == rt.embedder.model_key and chunks(env) == 2
    answer = rag.ask("When does the heron survey start?", vaults=["field"], runtime=rt)
    assert not answer.abstained and answer.references[0].source_path == "Projects/Heron.md"
    again = rag.index(runtime=rt)  # none named: every vault; nothing changed, nothing read again
    assert not again.failed and chunks(env) == 2

    # the link graph by the note's name, as the CLI, HTTP and MCP take it
    found = rag.related("Heron", k=5, runtime=rt)
    assert (found.vault, found.source_path) == ("field", "Projects/Heron.md")
    linked = [r for r in found.related if r.source_path == "Garden.md"]
    assert linked and linked[0].links_here and linked[0].anchor_text == "the survey"
    with pytest.raises(NotFoundError):
        rag.related("Owl", runtime=rt)
    with pytest.raises(InputError, match="k must be a whole number from 1"):
        rag.related("Heron", k=0, runtime=rt)
