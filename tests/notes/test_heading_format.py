"""One heading format on every surface: a passage's `heading_path` is the stored trail
(`# Alpha > ## Budget`, what is embedded and what BM25 reads) in SQL, in `compute_context`'s
citations, in the library's `search` and `ask` results and over the CLI's JSON; what a reader is shown
is `heading`, `Alpha › Budget` (rag.places), in the same results, the CLI's JSON and its text."""

from __future__ import annotations

import json

import psycopg
from psycopg.rows import dict_row

from rag.compute import compute_context
from rag.notes.ask import ask, search
from tests.notes.conftest import index_vault
from tests.support.cli import run_in_process
from tests.support.files import write_files

FILES = {"projects/alpha.md": "# Alpha\n\n## Timeline\n\nThe alpha project ships in March.\n\n"
                              "## Budget\n\nThe alpha project budget is forty thousand euros.\n"}
TRAIL = "# Alpha > ## Budget"
SHOWN = "Alpha › Budget"
QUERY = "alpha project budget euros"


def test_every_surface_shows_the_stored_trail(cli_env, db_url, tmp_path, capsys, runtime, notes_config) -> None:
    index_vault(capsys, "notes", write_files(tmp_path / "notes", FILES))
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        stored = {r["heading_path"] for r in conn.execute("select heading_path from chunks")}
        sql = conn.execute("select heading_path from match_lexical_chunks(%s, 1)", (QUERY,)).fetchone()
    assert TRAIL in stored and sql == {"heading_path": TRAIL}

    context = compute_context(QUERY, vaults=["notes"], runtime=runtime, mode="base")
    shown = {"compute_context": {c.heading_path for c in context.citations},
             "search": {i.heading_path for i in search(QUERY, vaults=["notes"], runtime=runtime).items},
             "ask": {r.heading_path for r in ask("What is the alpha project budget?", vaults=["notes"],
                                                 runtime=runtime).references}}
    code, out, err = run_in_process(capsys, "search", QUERY, "--json")
    assert code == 0, err
    shown["cli search --json"] = {i["heading_path"] for i in json.loads(out)["items"]}
    code, out, err = run_in_process(capsys, "ask", "What is the alpha project budget?", "--json")
    assert code == 0, err
    shown["cli ask --json"] = {r["heading_path"] for r in json.loads(out)["references"]}
    code, out, err = run_in_process(capsys, "search", QUERY)
    assert code == 0, err
    # by note: "   - <heading trail> (lines a-b)" under each note
    text_lines = {line.removeprefix("   - ").rsplit(" (line", 1)[0] for line in out.splitlines()
                  if line.startswith("   - ") and not line.endswith("(top of the note)")}
    assert all(values and values <= stored for values in shown.values()), shown
    assert all(TRAIL in values for name, values in shown.items() if name != "compute_context"), shown

    seen = {"compute_context": {c.heading for c in context.payload().ranked},
            "search": {i.heading for i in search(QUERY, vaults=["notes"], runtime=runtime).items},
            "cli search --json": {i["heading"] for i in json.loads(run_in_process(capsys, "search", QUERY,
                                                                                   "--json")[1])["items"]},
            "cli search": text_lines}
    assert all(SHOWN in values and not any("#" in v or " > " in v for v in values) for values in seen.values()), seen
