"""Note vectors (outline, inbound link lines): built at index time, refreshed only where their text
changed, never built from notes a reader of the note may not read, and read by `search` as a ranking
signal that moves no public reader's ranking when a restricted note is added."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from rag.access import Scope
from rag.config import load_settings
from rag.notes.ask import search
from rag.runtime import Runtime
from tests.ingest_db.helpers import indexed_vault

NOTES = {
    "Ribbon.md": "# Ribbon\n## Customize the ribbon\nThe ribbon holds buttons.\n",
    "Random note.md": "# Random note\nClick the dice in the [[Ribbon]] to open a random note.\n",
    "Sync.md": "# Sync\n## Version history\nSync keeps versions.\n",
}
SECRET = ("---\nconfidentiality: restricted\n---\n# Launch\n"
          "The [[Ribbon]] launch code zebra quartz lives in the vault.\n")
QUERY = "launch code zebra quartz"


@pytest.fixture
def vault(cli, tmp_path: Path) -> Path:
    return indexed_vault(cli, tmp_path / "notes", NOTES)


def vectors(conn: psycopg.Connection) -> dict[tuple[str, str], str]:
    rows = conn.execute("select d.source_path, v.field, v.source_hash from note_vectors v "
                        "join documents d on d.id = v.document_id").fetchall()
    return {(r["source_path"], r["field"]): r["source_hash"] for r in rows}


def test_every_note_has_an_outline_and_linked_notes_an_inbound_vector(vault: Path, aconn: psycopg.Connection) -> None:
    found = vectors(aconn)
    assert {p for p, f in found if f == "outline"} == set(NOTES)
    assert {p for p, f in found if f == "inbound"} == {"Ribbon.md"}


def test_only_changed_texts_are_embedded_again(vault: Path, cli, aconn: psycopg.Connection) -> None:
    before = vectors(aconn)
    (vault / "Sync.md").write_text("# Sync\n## Plans\nSync keeps versions.\n")
    (vault / "Notes.md").write_text("# Notes\nSee the [[Ribbon]] too.\n")
    assert cli("index", "--quiet")[0] == 0
    after = vectors(aconn)
    assert after[("Sync.md", "outline")] != before[("Sync.md", "outline")]  # a heading changed
    assert after[("Ribbon.md", "inbound")] != before[("Ribbon.md", "inbound")]  # a new note links to it
    assert after[("Random note.md", "outline")] == before[("Random note.md", "outline")]
    (vault / "Random note.md").write_text("# Random note\nClick the dice.\n")
    (vault / "Notes.md").unlink()
    assert cli("index", "--quiet")[0] == 0
    assert ("Ribbon.md", "inbound") not in vectors(aconn)  # nothing links to it any more


def test_a_restricted_note_moves_no_public_reader_s_ranking(vault: Path, cli) -> None:
    public = Scope(vaults=("notes",), clearance="public")

    def ranking() -> list[tuple[str, float]]:
        rt = Runtime.from_settings(load_settings())
        try:
            return [(i.source_path, i.score) for i in search(QUERY, k=10, runtime=rt, scope=public).items]
        finally:
            rt.close()

    before = ranking()
    (vault / "Launch.md").write_text(SECRET)
    assert cli("index", "--quiet")[0] == 0
    assert ranking() == before



def test_an_unchanged_vault_without_note_vectors_gets_them(vault: Path, cli, aconn: psycopg.Connection) -> None:
    before = vectors(aconn)
    aconn.execute("delete from note_vectors")
    code, out, _ = cli("index")
    assert code == 0 and "0 indexed" in out
    assert vectors(aconn) == before
