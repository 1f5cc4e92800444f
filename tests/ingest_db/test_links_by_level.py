"""Links as each reader may see them (issue 48): a link resolves once per clearance level among the
notes readable at that level, so the owner sees every link of a mixed-level vault resolved, an internal
reader the ones to internal notes, a public reader none to a hidden note, exactly as if it did not
exist. Real notes (markdown and a canvas) indexed by the real CLI, read as the owner and as console
roles; the revision that stores links per level, run on a populated database."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests.ingest_db.helpers import indexed_vault
from tests.ingest_db.test_links import rows
from tests.ingest_db.test_row_security import console_conn
from tests.support.files import write_files

INTERNAL = "---\nconfidentiality: internal\n---\n"
RESTRICTED = "---\nconfidentiality: restricted\n---\n"
PUBLIC_NOTES = {
    "Welcome.md": "# Welcome\nStart here.\n",
    "Public/Roadmap.md": ("# Roadmap\nWe build [[Project Heron]] this year.\n"
                          "The money is in the [[Budget]]. Read the [[Welcome]] first.\n"),
    "Boards/Plan.canvas": json.dumps({"nodes": [
        {"id": "card-1", "type": "text", "x": 0, "y": 0, "width": 200, "height": 100, "text": "Plan\n\nShip it."},
        {"id": "file-1", "type": "file", "file": "Team/Project Heron.md", "x": 300, "y": 0,
         "width": 200, "height": 100}], "edges": []}),
}
HIDDEN_NOTES = {
    "Team/Project Heron.md": INTERNAL + "# Project Heron\nHeron is paid from the [[Budget]]. See [[Welcome]].\n",
    "Finance/Budget.md": RESTRICTED + "# Budget\nTwelve herons for [[Project Heron]].\n",
}
NOTES = {**PUBLIC_NOTES, **HIDDEN_NOTES}
CROSS_LEVEL = {("Public/Roadmap.md", "Project Heron"), ("Public/Roadmap.md", "Budget"),
               ("Team/Project Heron.md", "Budget"), ("Boards/Plan.canvas", "Team/Project Heron.md")}


@pytest.fixture
def vault(cli, tmp_path: Path) -> Path:
    return indexed_vault(cli, tmp_path / "notes", NOTES)


def note_paths(conn: psycopg.Connection, vault: str = "notes") -> list[str]:
    return [str(r[0]) for r in rows(conn, "select d.source_path from documents d join vaults v on v.id = d.vault_id "
                                          "where v.name = %s order by 1", vault)]


def graph(conn: psycopg.Connection, vault: str = "notes") -> dict[str, object]:
    """Everything the link functions show a reader of the vault: each readable note's outlinks, backlinks
    and related notes (scores included), and the unresolved links."""
    paths = note_paths(conn, vault)
    return {
        "notes": paths,
        "outlinks": {p: rows(conn, "select line, target_text, target_path from ragpg_outlinks(%s, %s)", vault, p)
                     for p in paths},
        "backlinks": {p: rows(conn, "select source_path, link_count from ragpg_backlinks(%s, %s)", vault, p)
                      for p in paths},
        "related": {p: rows(conn, "select path, links_here, linked_from_here, anchor_text, similarity "
                                  "from ragpg_related_notes(%s, %s, 10)", vault, p) for p in paths},
        "unresolved": rows(conn, "select source_path, target_text from ragpg_unresolved_links(%s)", vault),
    }


def resolved(conn: psycopg.Connection) -> dict[tuple[str, str], str]:
    """(source, target text) -> target path of every link the reader sees resolved (attachments aside)."""
    return {(p, str(t)): str(target) for p in note_paths(conn)
            for t, target in rows(conn, "select target_text, target_path from ragpg_outlinks('notes', %s)", p)
            if target}


@pytest.mark.security
def test_each_reader_sees_the_links_to_the_notes_it_may_read(vault: Path, cli, aconn: psycopg.Connection) -> None:
    owner = resolved(aconn)
    assert CROSS_LEVEL <= set(owner) and rows(aconn, "select * from ragpg_unresolved_links('notes')") == []
    assert rows(aconn, "select target_path from ragpg_outlinks('notes', 'Boards/Plan.canvas')") == [
        ("Team/Project Heron.md",)]
    assert rows(aconn, "select source_path from ragpg_backlinks('notes', 'Team/Project Heron.md')") == [
        ("Boards/Plan.canvas",), ("Finance/Budget.md",), ("Public/Roadmap.md",)]
    code, out, err = cli("related", "Public/Roadmap.md")
    assert code == 0 and "Team/Project Heron.md  (linked from here with 'Project Heron'" in out, err
    with console_conn(cli, "--vault", "notes", "--clearance", "internal") as conn:
        internal = set(resolved(conn))
        assert internal == {link for link in owner if "Budget" not in link[1] and link[0] != "Finance/Budget.md"}
        assert ("Public/Roadmap.md", "Project Heron") in internal and ("Boards/Plan.canvas", "Team/Project Heron.md") in internal
        assert sorted(rows(conn, "select source_path, target_text from ragpg_unresolved_links('notes')")) == [
            ("Public/Roadmap.md", "Budget"), ("Team/Project Heron.md", "Budget")]
        assert rows(conn, "select source_path from ragpg_backlinks('notes', 'Team/Project Heron.md')") == [
            ("Boards/Plan.canvas",), ("Public/Roadmap.md",)]
        assert [r[0] for r in rows(conn, "select path from ragpg_linked_notes('notes', 'Public/Roadmap.md')")] == [
            "Team/Project Heron.md", "Welcome.md"]
    with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
        assert resolved(conn) == {("Public/Roadmap.md", "Welcome"): "Welcome.md"}
        assert sorted(rows(conn, "select source_path, target_text from ragpg_unresolved_links('notes')")) == [
            ("Boards/Plan.canvas", "Team/Project Heron.md"), ("Public/Roadmap.md", "Budget"),
            ("Public/Roadmap.md", "Project Heron")]


@pytest.mark.security
def test_a_public_reader_sees_the_hidden_notes_links_as_if_the_notes_did_not_exist(
        vault: Path, cli, tmp_path: Path) -> None:
    """The same public notes in a vault without the internal and restricted ones: a public reader of
    either sees the same graph, scores included."""
    bare = write_files(tmp_path / "bare", PUBLIC_NOTES)
    assert cli("vault", "add", "bare", str(bare))[0] == 0
    assert cli("index", "--quiet")[0] == 0
    with console_conn(cli, "--clearance", "public") as conn:
        assert graph(conn, "notes") == graph(conn, "bare")


@pytest.mark.security
def test_a_hidden_namesake_changes_nothing_a_lower_reader_sees(vault: Path, cli, aconn: psycopg.Connection) -> None:
    """A restricted note named like the internal Project Heron and an internal one named like the public
    Welcome: the public reader's links, backlinks, related notes (scores included) and note vectors stay
    as they were, and so do the internal reader's links; only the owner's follow the new names."""

    def public_view() -> tuple[object, ...]:
        with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
            return (graph(conn), rows(conn, "select d.source_path, v.field, v.source_hash from note_vectors v "
                                            "join documents d on d.id = v.document_id order by 1, 2"))

    def internal_links() -> dict[tuple[str, str], str]:
        with console_conn(cli, "--vault", "notes", "--clearance", "internal") as conn:
            return resolved(conn)

    before, internal_before = public_view(), internal_links()
    assert internal_before[("Public/Roadmap.md", "Project Heron")] == "Team/Project Heron.md"
    write_files(vault, {"Archive/Project Heron.md": RESTRICTED + "# Project Heron\nThe old heron plan.\n",
                        "Archive/Welcome.md": INTERNAL + "# Welcome\nThe team's own welcome.\n"})
    assert cli("index", "--quiet")[0] == 0
    assert public_view() == before
    assert internal_links() == internal_before
    owner = resolved(aconn)  # two notes named Project Heron, neither in the linking note's folder
    assert ("Public/Roadmap.md", "Project Heron") not in owner and ("Finance/Budget.md", "Project Heron") not in owner
    assert owner[("Boards/Plan.canvas", "Team/Project Heron.md")] == "Team/Project Heron.md"  # a path still resolves


@pytest.mark.security
def test_a_console_role_reads_no_resolution_above_its_clearance(vault: Path, cli, aconn: psycopg.Connection) -> None:
    hidden_ids = {r[0] for r in rows(aconn, "select id from documents where confidentiality <> 'public'")}
    assert len(hidden_ids) == 2
    with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
        seen = rows(conn, "select level, target_document_id from link_targets")
        assert seen and {level for level, _ in seen} == {1}
        assert not hidden_ids & {target for _, target in seen}
        # one resolution per link it may read: the count says nothing of the hidden notes
        assert rows(conn, "select count(*) from link_targets") == rows(conn, "select count(*) from links")
        conn.execute("set ragpg.clearance = 'restricted'")  # narrows only
        assert {r[0] for r in rows(conn, "select level from link_targets")} == {1}
        assert rows(conn, "select count(*) from links l join documents s on s.id = l.source_document_id "
                          "where s.confidentiality <> 'public'") == [(0,)]
    with console_conn(cli, "--vault", "notes", "--clearance", "internal") as conn:
        levels = {r[0] for r in rows(conn, "select level from link_targets")}
        assert levels == {1, 2}
        budget = rows(aconn, "select id from documents where source_path = 'Finance/Budget.md'")[0][0]
        assert rows(conn, "select count(*) from link_targets where target_document_id = %s", budget) == [(0,)]
    # the owner holds at most four resolutions per link, one per level from its source's up
    assert rows(aconn, "select count(*) from links l join documents s on s.id = l.source_document_id where "
                       "(select count(*) from link_targets r where r.link_id = l.id) "
                       "<> 5 - ragpg_level_rank(s.confidentiality)") == [(0,)]


@pytest.mark.security
def test_0019_keeps_the_stored_targets_and_resolves_per_level_at_the_next_index(
        vault: Path, cli, db_url: str, aconn: psycopg.Connection) -> None:
    from rag.store import migrate

    def heron_target() -> object:
        return aconn.execute("select l.target_document_id as t from links l join documents d on d.id = "
                             "l.source_document_id where d.source_path = 'Public/Roadmap.md' "
                             "and l.target_text = 'Project Heron'").fetchone()["t"]

    migrate.downgrade(db_url, "0018")
    # the 0018 layout: one target per link, resolved among the notes of its source's level or below
    assert heron_target() is None
    welcome = aconn.execute("select id from documents where source_path = 'Welcome.md'").fetchone()["id"]
    assert aconn.execute("select count(*) as n from links where target_document_id = %s",
                         (welcome,)).fetchone()["n"] == 2
    assert migrate.upgrade(db_url) == migrate.head_revision()
    assert aconn.execute("select count(*) as n from documents where links_indexed").fetchone()["n"] == 0
    # until the next index, every reader sees what the old rule stored
    assert ("Public/Roadmap.md", "Project Heron") in rows(
        aconn, "select source_path, target_text from ragpg_unresolved_links('notes')")
    assert len(rows(aconn, "select 1 from ragpg_backlinks('notes', 'Welcome.md')")) == 2
    code, out, err = cli("index")
    assert code == 0 and "0 indexed" in out and "0 chunks written" in out, err
    assert CROSS_LEVEL <= set(resolved(aconn))
    assert rows(aconn, "select * from ragpg_unresolved_links('notes')") == []


@pytest.mark.security
def test_a_note_raised_above_a_reader_takes_its_resolutions_along(vault: Path, cli, aconn: psycopg.Connection,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.ingest import pipeline

    welcome = aconn.execute("select id from documents where source_path = 'Welcome.md'").fetchone()["id"]
    # a target raised before the links are resolved again: its id is in no row a public reader sees
    aconn.execute("update documents set confidentiality = 'restricted' where id = %s", (welcome,))
    with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
        assert rows(conn, "select count(*) from link_targets where target_document_id = %s", welcome) == [(0,)]
        assert rows(conn, "select target_path from ragpg_outlinks('notes', 'Public/Roadmap.md') "
                          "where target_text = 'Welcome'") == [(None,)]
    aconn.execute("update documents set confidentiality = 'public' where id = %s", (welcome,))
    # an edit the parser rejects keeps the old note as restricted, links and all: only the restricted
    # resolution of each of its links is left
    (vault / "Public" / "Roadmap.md").write_text(RESTRICTED + "# Roadmap\nThe secret [[Welcome]].\n")
    real = pipeline.parse_document

    def choke(text: str, source_path: str) -> object:
        if source_path == "Public/Roadmap.md":
            raise RecursionError("parser gave up")
        return real(text, source_path)

    monkeypatch.setattr(pipeline, "parse_document", choke)
    cli("index", "--quiet")
    assert rows(aconn, "select distinct r.level from link_targets r join links l on l.id = r.link_id "
                       "join documents s on s.id = l.source_document_id where s.source_path = 'Public/Roadmap.md'") == [
        (4,)]
    with console_conn(cli, "--vault", "notes", "--clearance", "public") as conn:
        assert rows(conn, "select source_path from ragpg_backlinks('notes', 'Welcome.md')") == []
        assert rows(conn, "select count(*) from link_targets") == rows(conn, "select count(*) from links") == [(1,)]
