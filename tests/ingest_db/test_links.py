"""The link graph in Postgres: links read at index time, resolved as Obsidian resolves names, kept right by
incremental runs, and bound by the same clearance as the notes (real notes, the real CLI, a console role)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.ingest_db.helpers import indexed_vault
from tests.ingest_db.test_row_security import console_conn

NOTES = {
    "Ribbon.md": "# Ribbon\nThe ribbon holds buttons.\n",
    "Plugins/Random note.md": ("# Random note\nClick **Open random note** ![[obsidian-icon-dice.svg#icon]] in the "
                               "[[Ribbon]]. See [[Core plugins|the core plugins]].\n"),
    "Plugins/Core plugins.md": ("---\naliases: [Built-in plugins]\n---\n# Core plugins\n"
                                "- [[Random note#Usage|Random note]] opens a note.\n"
                                "Unlike [[Community plugins]], they ship with the app.\n"),
    "Guide/Start.md": "# Start\nUse the [[built-in plugins]] and the [ribbon](../Ribbon.md). Read [[Topic]].\n",
    "a/Topic.md": "# Topic A\nOne.\n",
    "b/Topic.md": "# Topic B\nTwo.\n",
    "Secret.md": "---\nconfidentiality: restricted\n---\n# Secret\nThe [[Ribbon]] hides a key.\n",
    "Shared.md": "# Shared\nMentions [[Secret]] by name.\n",
}


@pytest.fixture
def vault(cli, tmp_path: Path) -> Path:
    return indexed_vault(cli, tmp_path / "notes", NOTES)


def rows(conn: psycopg.Connection, query: str, *args: object) -> list[tuple[object, ...]]:
    return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in conn.execute(query, args).fetchall()]


def test_backlinks_count_linking_notes_with_their_words_and_line(vault: Path, aconn: psycopg.Connection) -> None:
    back = rows(aconn, "select source_path, link_count, anchor_text, sentence "
                       "from ragpg_backlinks('notes', 'Ribbon.md')")
    assert back == [
        ("Guide/Start.md", 1, "ribbon", "Use the built-in plugins and the ribbon. Read Topic."),
        ("Plugins/Random note.md", 1, "Ribbon", "Click Open random note (the dice icon) in the Ribbon. See the core plugins."),
        ("Secret.md", 1, "Ribbon", "The Ribbon hides a key."),
    ]


def test_outlinks_resolve_names_aliases_headings_and_keep_the_unresolved(vault: Path, aconn: psycopg.Connection) -> None:
    out = rows(aconn, "select kind, target_text, target_path, target_heading, anchor_text "
                      "from ragpg_outlinks('notes', 'Plugins/Core plugins.md')")
    assert out == [("link", "Random note", "Plugins/Random note.md", "Usage", "Random note"),
                   ("link", "Community plugins", None, None, "Community plugins")]
    start = rows(aconn, "select target_text, target_path from ragpg_outlinks('notes', 'Guide/Start.md')")
    # an alias, a relative markdown link, and a name two notes share (from neither's folder): unresolved
    assert sorted(start, key=str) == [("../Ribbon.md", "Ribbon.md"), ("Topic", None),
                                      ("built-in plugins", "Plugins/Core plugins.md")]
    embeds = rows(aconn, "select kind, target_text, target_path from ragpg_outlinks('notes', 'Plugins/Random note.md')")
    assert embeds[0] == ("embed", "obsidian-icon-dice.svg", None)
    unresolved = rows(aconn, "select source_path, target_text from ragpg_unresolved_links('notes')")
    assert ("Plugins/Core plugins.md", "Community plugins") in unresolved
    assert ("Guide/Start.md", "Topic") in unresolved
    assert all(t != "obsidian-icon-dice.svg" for _, t in unresolved)  # attachments are not missing notes


def test_renames_deletes_and_new_notes_are_followed_by_the_next_run(vault: Path, cli, aconn: psycopg.Connection) -> None:
    (vault / "Ribbon.md").rename(vault / "Toolbar.md")
    (vault / "Community plugins.md").write_text("# Community plugins\nMade by others.\n")
    assert cli("index", "--quiet")[0] == 0
    unresolved = rows(aconn, "select source_path, target_text from ragpg_unresolved_links('notes')")
    assert ("Plugins/Random note.md", "Ribbon") in unresolved  # the renamed note's inbound links
    assert ("Plugins/Core plugins.md", "Community plugins") not in unresolved  # taken by the new note
    assert rows(aconn, "select source_path from ragpg_backlinks('notes', 'Community plugins.md')") == [
        ("Plugins/Core plugins.md",)]
    (vault / "Toolbar.md").rename(vault / "Ribbon.md")
    assert cli("index", "--quiet")[0] == 0
    assert len(rows(aconn, "select 1 from ragpg_backlinks('notes', 'Ribbon.md')")) == 3


def test_notes_indexed_before_the_link_graph_get_their_links_without_being_embedded_again(
        vault: Path, cli, aconn: psycopg.Connection) -> None:
    aconn.execute("delete from links")
    aconn.execute("update documents set links_indexed = false")
    code, out, _ = cli("index")
    assert code == 0 and "0 indexed" in out and "0 chunks written" in out
    assert len(rows(aconn, "select 1 from ragpg_backlinks('notes', 'Ribbon.md')")) == 3


def test_a_reader_sees_a_link_only_with_its_source_and_a_target_only_when_cleared(vault: Path, cli) -> None:
    with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
        back = rows(conn, "select source_path from ragpg_backlinks('notes', 'Ribbon.md')")
        assert ("Secret.md",) not in back and len(back) == 2
        assert rows(conn, "select count(*) from links l join documents d on d.id = l.source_document_id "
                          "where d.source_path = 'Secret.md'") == [(0,)]
        assert rows(conn, "select count(*) from links") == rows(
            conn, "select count(*) from links l where exists (select 1 from documents d where d.id = l.source_document_id)")
        # the restricted target is named as written in a public note, never resolved to its path, and
        # to this reader it is as missing as a note that does not exist
        assert rows(conn, "select target_text, target_path from ragpg_outlinks('notes', 'Shared.md')") == [
            ("Secret", None)]
        assert ("Shared.md", "Secret") in rows(conn, "select source_path, target_text "
                                                     "from ragpg_unresolved_links('notes')")
        with pytest.raises(psycopg.errors.NoDataFound, match="no note 'Secret.md' in vault 'notes'"):
            conn.execute("select * from ragpg_backlinks('notes', 'Secret.md')")


def test_unknown_vault_and_note_are_one_line_errors(vault: Path, aconn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.UndefinedObject, match=r"unknown vault 'nope' \(known: notes\)"):
        aconn.execute("select * from ragpg_outlinks('nope', 'Ribbon.md')")
    with pytest.raises(psycopg.errors.NoDataFound, match="no note 'Missing.md' in vault 'notes'"):
        aconn.execute("select * from ragpg_backlinks('notes', 'Missing.md')")


def test_linked_and_similar_notes(vault: Path, aconn: psycopg.Connection) -> None:
    linked = rows(aconn, "select path, links_here, linked_from_here from ragpg_linked_notes('notes', 'Ribbon.md')")
    assert sorted(linked) == [("Guide/Start.md", True, False), ("Plugins/Random note.md", True, False),
                              ("Secret.md", True, False)]
    similar = rows(aconn, "select path from ragpg_similar_notes('notes', 'Plugins/Random note.md', 3)")
    assert len(similar) == 3 and ("Plugins/Random note.md",) not in similar


def test_ragpg_related_lists_linked_notes_with_reasons_and_refuses_bad_input(vault: Path, cli) -> None:
    code, out, err = cli("related", "Plugins/Random note.md")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Plugins/Core plugins.md  (links here with 'Random note'; linked from here")
    assert "Ribbon.md  (linked from here with 'Ribbon'" in out
    code, out, _ = cli("related", "Ribbon.md", "--vault", "notes", "--json", "--k", "2")
    assert code == 0 and '"source_path": "Ribbon.md"' in out and out.count('"reasons"') == 2
    for args, exit_code, message in [
        (("related", "Nothing.md"), 4, "error: no note Nothing.md in any vault"),
        (("related", "Ribbon.md", "--vault", "nope"), 4, "error: unknown vault 'nope' (known: notes)"),
        (("related", "Ribbon.md", "--k", "0"), 2, "error: k must be a whole number from 1 to 1000, got 0"),
        (("related", "../Ribbon.md"), 2, "path traversal"),
    ]:
        code, out, err = cli(*args)
        assert code == exit_code and out == "" and message in err and len(err.strip().splitlines()) == 1, (args, err)


@pytest.mark.security
def test_a_hidden_note_never_changes_how_a_readers_links_resolve(cli, tmp_path: Path,
                                                                 aconn: psycopg.Connection) -> None:
    """A link resolves only among the notes its source's readers may read (its level or below): a
    restricted note named like a public link's target, elsewhere or at the very path, changes nothing a
    public reader sees (not the backlinks, the unresolved links, the outlinks or the note vectors)."""
    root = indexed_vault(cli, tmp_path / "notes", {"Public/Garden.md": "# Garden\nTomatoes in rows.\n",
                                                   "Index.md": "# Index\nSee [[Garden]] for the beds.\n"})

    def seen() -> tuple[list[tuple[object, ...]], ...]:
        with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
            return (rows(conn, "select source_path from ragpg_backlinks('notes', 'Public/Garden.md')"),
                    rows(conn, "select source_path, target_text from ragpg_unresolved_links('notes')"),
                    rows(conn, "select target_text, target_path from ragpg_outlinks('notes', 'Index.md')"),
                    rows(conn, "select document_id, field from note_vectors order by 1, 2"))

    before = seen()
    assert before[0] == [("Index.md",)] and before[1] == [] and before[2] == [("Garden", "Public/Garden.md")]
    hidden = "---\nconfidentiality: restricted\n---\n# Garden\nSecret beds. See [[Garden]].\n"
    (root / "Secret").mkdir()
    (root / "Secret" / "Garden.md").write_text(hidden)
    (root / "Garden.md").write_text(hidden)
    assert cli("index", "--quiet")[0] == 0
    assert seen() == before
    # a restricted note's own links resolve among every note: its path match is the restricted root note
    assert rows(aconn, "select target_path from ragpg_outlinks('notes', 'Secret/Garden.md')") == [("Garden.md",)]


@pytest.mark.security
def test_0017_resolves_again_what_the_old_rule_stored(vault: Path, cli, db_url: str, aconn: psycopg.Connection) -> None:
    from rag.store import migrate

    def target(source: str) -> object:  # resolved at the source's level (0019 keeps one resolution per level)
        return aconn.execute("select r.target_document_id as t from link_targets r join links l on l.id = r.link_id "
                             "join documents d on d.id = l.source_document_id where d.source_path = %s "
                             "and r.level = ragpg_level_rank(d.confidentiality)", (source,)).fetchone()["t"]

    secret = aconn.execute("select id from documents where source_path = 'Secret.md'").fetchone()["id"]
    assert target("Shared.md") is None  # a public note's link to a restricted one: unresolved
    migrate.downgrade(db_url, "0016")
    # what the rule before stored: the public note's link pointing at the restricted note
    aconn.execute("update links set target_document_id = %s where source_document_id = "
                  "(select id from documents where source_path = 'Shared.md')", (secret,))
    aconn.commit()
    assert migrate.upgrade(db_url) == migrate.head_revision()
    assert target("Shared.md") is None
    assert aconn.execute("select count(*) as n from documents where links_indexed").fetchone()["n"] == 0
    assert cli("index", "--quiet")[0] == 0  # reads every note's links again, embeds nothing
    assert aconn.execute("select count(*) as n from documents where not links_indexed").fetchone()["n"] == 0
    assert rows(aconn, "select source_path from ragpg_backlinks('notes', 'Ribbon.md') order by 1") == [
        ("Guide/Start.md",), ("Plugins/Random note.md",), ("Secret.md",)]
