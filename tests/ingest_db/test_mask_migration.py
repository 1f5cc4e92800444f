"""Revision 0012 masks what an earlier release stored raw, and the next index run finishes the job.

The earlier release is reproduced by indexing with the masking switched off (the indexer as it was:
raw paths, text and front matter), which also leaves what it left in the BM25 statistics, the
vectors and `index_runs`. Then the database goes back one revision and up again, through 0012."""

from __future__ import annotations

import importlib
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from rag.config import Settings
from rag.ingest import pipeline, store, walk
from rag.store import migrate
from tests.ingest_db.helpers import add, embedding_count, index, tables_holding, with_settings
from tests.support.files import write_files

MIGRATION = importlib.import_module("rag.db.migrations.versions.0012_mask_stored_secrets")
TOKEN = "ghp_" + "Rt5" * 12
KEY_LINES = [f"{c * 20}QmFzZTY0{c * 20}9x" for c in "ABCDEFGHIJKLMNOP"]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END RSA PRIVATE KEY-----\n"
FILES = {
    f"ops {TOKEN}/deploy.md": (f"---\ntitle: Deploy AKIAQWERTYUIOPASDFGH\ntags: [{TOKEN}]\n"
                               "aws_secret_access_key: Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9\n---\n"
                               f"# Deploy\n\nThe deploy key of the garden shed:\n\n{PEM}\n"
                               "## After\n\nRotate the garden shed keys monthly with password=Pw7Pw7Pw7.\n"),
    "plain.md": "# Plain\n\nNothing to hide in the garden shed.\n",
}
NEEDLES = [TOKEN[4:], "QWERTYUIOPASDFGH", "Zx9Zx9Zx9Zx9", "Pw7Pw7Pw7", *KEY_LINES]


@pytest.fixture
def raw_index(monkeypatch: pytest.MonkeyPatch):
    """Index as the release before masking did."""
    def unmasked(settings: Settings) -> None:
        with monkeypatch.context() as m:
            for module, name in ((walk, "mask_path"), (pipeline, "mask_text"), (store, "mask_text"),
                                 (store, "mask_structure")):
                m.setattr(module, name, lambda value: value)
            assert not index(settings).failed

    return unmasked


def bm25_bookkeeping(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """The postings and statistics as stored (statistics summed over levels)."""
    return {
        "postings": [tuple(r.values()) for r in conn.execute(
            "select chunk_id, lexeme, tf, dl from bm25_postings order by 1, 2")],
        "vault": [tuple(r.values()) for r in conn.execute(
            "select vault_id, sum(chunk_count) as n, sum(total_length) as len from bm25_vault_stats group by 1 order by 1")],
        "terms": [tuple(r.values()) for r in conn.execute(
            "select vault_id, lexeme, sum(chunk_frequency) as df from bm25_term_stats group by 1, 2 order by 1, 2")],
        "tsv": [tuple(r.values()) for r in conn.execute(
            # a row's text as BM25 reads it now (the note's names first), or as frozen revision 0012 analysed the
            # rows it masked (heading and text; the next index run re-indexes every note: the passage text version)
            "select id, content_tsv in (to_tsvector(text_search_config, ragpg_chunk_search_text(heading_path, content,"
            " metadata)), to_tsvector(text_search_config, heading_path || ' ' || content)) as fresh, "
            "lexeme_count = ragpg_tsvector_token_count(content_tsv) as counted from chunks order by 1")],
    }


def recomputed_bm25(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """The same, computed afresh from the chunks' text."""
    return {
        "postings": [tuple(r.values()) for r in conn.execute(
            "select c.id, u.lexeme, coalesce(cardinality(u.positions), 1) as tf, c.lexeme_count as dl "
            "from chunks c cross join lateral unnest(c.content_tsv) as u order by 1, 2")],
        "vault": [tuple(r.values()) for r in conn.execute(
            "select vault_id, count(*) as n, sum(lexeme_count) as len from chunks group by 1 order by 1")],
        "terms": [tuple(r.values()) for r in conn.execute(
            "select c.vault_id, u.lexeme, count(*) as df from chunks c cross join lateral unnest(c.content_tsv) as u "
            "group by 1, 2 order by 1, 2")],
        "tsv": [(r["id"], True, True) for r in conn.execute("select id from chunks order by 1")],
    }


def vectors_of(conn: psycopg.Connection, table: str, chunk_ids: list[int]) -> int:
    return conn.execute(sql.SQL("select count(*) as n from {} where chunk_id = any(%s)").format(
        sql.Identifier(table)), (chunk_ids,)).fetchone()["n"]


@pytest.mark.security
def test_0012_masks_stored_rows_and_the_next_run_reembeds_them(aconn: psycopg.Connection, db_url: str,
                                                               settings: Settings, tmp_path: Path, raw_index) -> None:
    settings = with_settings(settings, chunking={"soft_bytes": 300, "hard_bytes": 600, "overlap_bytes": 40})
    root = write_files(tmp_path / "v", FILES)
    add(aconn, "v", root)
    raw_index(settings)
    aconn.execute("insert into index_runs (id, status, error) values (gen_random_uuid(), 'failed', %s)",
                  (f"embedding failed for ops {TOKEN}/deploy.md",))
    assert "chunks.content" in tables_holding(aconn, NEEDLES)  # the earlier release stored them raw
    assert aconn.execute("select count(*) as n from chunks where content ~ '^[A-Za-z0-9]{40}'").fetchone()["n"], \
        "the key block should span chunks, so a chunk starts inside it"
    table = aconn.execute("select embedding_table from embedding_models").fetchone()["embedding_table"]
    before = {r["id"]: r["content"] for r in aconn.execute("select id, content from chunks")}

    migrate.downgrade(db_url, MIGRATION.down_revision)
    migrate.upgrade(db_url)

    assert tables_holding(aconn, NEEDLES) == []
    assert bm25_bookkeeping(aconn) == recomputed_bm25(aconn)  # the triggers were off; the revision kept it
    after = {r["id"]: r["content"] for r in aconn.execute("select id, content from chunks")}
    changed = [i for i in before if after[i] != before[i]]
    assert changed and vectors_of(aconn, table, changed) == 0  # vectors of the raw text are gone
    assert vectors_of(aconn, table, [i for i in before if i not in changed]) == len(before) - len(changed)
    versions = {r["source_path"]: r["document_version"] for r in aconn.execute(
        "select source_path, document_version from documents")}
    assert versions["plain.md"].startswith(MIGRATION.STALE_VERSION_PREFIX) is False
    masked_path = next(p for p in versions if p != "plain.md")
    assert versions[masked_path].startswith(MIGRATION.STALE_VERSION_PREFIX)

    report = index(settings).vaults[0]  # the current indexer: same documents, found by masked path
    assert report.error is None
    assert (report.files_indexed, report.files_unchanged, report.files_removed) == (1, 1, 0)
    assert sorted(versions) == sorted(r["source_path"] for r in aconn.execute("select source_path from documents"))
    assert embedding_count(aconn, table, "v") == aconn.execute("select count(*) as n from chunks").fetchone()["n"]
    assert tables_holding(aconn, NEEDLES) == []


def test_chunks_cut_inside_a_key_block_are_masked_in_order() -> None:
    texts = ["intro\n-----BEGIN RSA PRIVATE KEY-----\n" + KEY_LINES[0],
             KEY_LINES[0][30:] + "\n" + KEY_LINES[1] + "\n" + KEY_LINES[2],  # starts mid-line
             KEY_LINES[3] + "\n-----END RSA PRIVATE KEY-----\nafter words",
             "after words\nmore words"]
    masked = MIGRATION.mask_chunk_texts(texts)
    assert not any(line in "\n".join(masked) for line in KEY_LINES[:4])
    assert [m.count("\n") for m in masked] == [t.count("\n") for t in texts]
    assert masked[3] == texts[3] and masked[2].endswith("-----END RSA PRIVATE KEY-----\nafter words")
