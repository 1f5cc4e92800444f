"""Issue 29: BM25 statistics and scores say nothing about chunks a role may not read.

A restricted note holding a rare word (and the common words of the public notes) is added and then
removed. A console role of clearance public, and the server's reader scoped to public, read every
statistic, score and search the same before, during and after; pg_textsearch's own functions, whose
scores use the whole index's statistics, are refused to both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from rag.access import Scope
from rag.config import Settings
from rag.notes.ask import search
from rag.runtime import Runtime
from rag.store.database import open_connection
from rag.store.row_security import apply_read_scope
from tests.ingest_db.test_row_security import NOTES, QUERY, console_conn, indexed, model_suffix  # noqa: F401
from tests.support.files import write_files

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("indexed")]

RARE = "zanzibarite"
HIDDEN = {"vault/hidden.md": f"---\nconfidentiality: restricted\n---\n# Hidden\nThe {RARE} tomato launch code "
                             f"garden sun, {RARE} again.\n"}
QUERIES = (QUERY, RARE, f"tomato {RARE} garden", "launch sun")
FILTER = {"source_path": {"$gte": ""}}
REFUSED_PG_TEXTSEARCH = (
    "select bm25_text_bm25query_score(%(w)s, to_bm25query(%(w)s, %(idx)s))",
    "select to_bm25query(%(w)s)",
    "select bm25_text_text_score(%(w)s, %(w)s)",
    "select t.search_text <@> %(w)s::text from {table} t",
    "select t.search_text <@> to_bm25query(%(w)s, %(idx)s) from {table} t",
    "select bm25_summarize_index(%(idx)s)",
    "select bm25_dump_index(%(idx)s)",
    "select * from ragpg_lexical_scores_indexed(%(w)s, 10, array[%(vault)s::bigint], array['english']::regconfig[],"
    " array[%(w)s], array[1::float8], array[10::float8], 0.9, 0.4)",
)


def rows(conn: psycopg.Connection, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in conn.execute(query, params).fetchall())


def scores(conn: psycopg.Connection, query: str, params: Any) -> list[tuple[int, float]]:
    return [(r["chunk_id"], r["score"]) for r in conn.execute(query, params).fetchall()]


def reachable(conn: psycopg.Connection, suffix: str) -> dict[str, Any]:
    """Every statistic, score and search a reader can run over the notes vault."""
    out: dict[str, Any] = {
        "term_stats": rows(conn, "select * from bm25_term_stats"),
        "vault_stats": rows(conn, "select * from bm25_vault_stats"),
        "filtered": scores(conn, "select chunk_id, bm25_score as score from match_lexical_chunks(%s, 50, %s)",
                           (QUERY, Jsonb(FILTER))),
    }
    embedding = conn.execute(sql.SQL("select embedding from {} order by chunk_id limit 1").format(
        sql.Identifier(f"embeddings_{suffix}"))).fetchone()["embedding"]
    for q in QUERIES:
        out[f"lexemes {q}"] = rows(conn, "select * from ragpg_query_lexemes(%s)", (q,))
        out[f"term stats {q}"] = rows(conn, "select * from ragpg_query_term_stats(%s)", (q,))
        out[f"term stats public {q}"] = rows(conn, "select * from ragpg_query_term_stats(%s, null, array['public'])", (q,))
        out[f"scores {q}"] = rows(conn, "select * from ragpg_lexical_scores(%s, 60, '{}', 0.9, 0.4)", (q,))
        out[f"backend {q}"] = conn.execute("select ragpg_lexical_backend(null, '{}', 0.9, 0.4, 60, %s) as b",
                                           (q,)).fetchone()["b"]
        out[f"lexical {q}"] = scores(conn, "select chunk_id, bm25_score as score from match_lexical_chunks(%s, 50)", (q,))
        out[f"search_lexical {q}"] = scores(conn, "select chunk_id, score from search_lexical(%s, 50)", (q,))
        out[f"search_hybrid {q}"] = scores(conn, "select chunk_id, score from search_hybrid(%s, 50)", (q,))
        out[f"hybrid {q}"] = scores(conn, sql.SQL("select chunk_id, rrf_score as score from {}(%s, %s, 50)").format(
            sql.Identifier(f"match_hybrid_chunks_{suffix}")), (q, embedding))
    return out


def refused_pg_textsearch(conn: psycopg.Connection, aconn: psycopg.Connection) -> None:
    index = aconn.execute("select i.index_name, i.table_name, i.vault_id from bm25_indexes i"
                          " join vaults v on v.id = i.vault_id where v.name = 'notes'").fetchone()
    if index is None:
        pytest.skip("this server has no pg_textsearch: nothing of it to refuse")
    for probe in REFUSED_PG_TEXTSEARCH:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(sql.SQL(probe).format(table=sql.Identifier(index["table_name"])),
                         {"w": RARE, "idx": index["index_name"], "vault": index["vault_id"]})


def key_view(settings: Settings) -> dict[str, Any]:
    """What an API key scoped to public notes gets from the library (the server's path): passages and scores."""
    rt = Runtime(settings)
    try:
        key = Scope(vaults=("notes",), clearance="public", principal="key:test")
        return {q: [(i.source_path, i.ordinal, i.score) for i in search(q, runtime=rt, scope=key).items]
                for q in QUERIES}
    finally:
        rt.close()


@pytest.fixture
def readers(cli, db_url: str) -> Iterator[dict[str, psycopg.Connection]]:
    """A public console role bound to the notes vault, and the server's reader scoped the same way."""
    reader = open_connection(db_url, autocommit=True)
    apply_read_scope(reader, Scope(vaults=("notes",), clearance="public", principal="key:test"))
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as console:
        yield {"console": console, "reader": reader}
    reader.close()


def test_a_hidden_note_moves_no_statistic_or_score_a_public_reader_sees(
        cli, aconn: psycopg.Connection, readers: dict[str, psycopg.Connection], tmp_path: Path,
        settings: Settings) -> None:
    suffix = model_suffix(aconn)
    before = {name: reachable(conn, suffix) for name, conn in readers.items()}
    key_before = key_view(settings)
    assert key_before[QUERY]
    assert before["console"][f"lexical {QUERY}"] and before["reader"][f"lexical {QUERY}"]
    # the bm25 index ranks with every chunk's statistics: the owner's alone, the SQL BM25 for the rest
    owners_backend = aconn.execute("select ragpg_lexical_backend(null, '{}', 0.9, 0.4) as b").fetchone()["b"]
    assert owners_backend == ("pg_textsearch" if aconn.execute("select ragpg_bm25_index_available() as a"
                                                               ).fetchone()["a"] else "sql")
    assert {b[f"backend {QUERY}"] for b in before.values()} == {"sql"}

    write_files(tmp_path / "notes", HIDDEN)
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    owner_hits = {r["source_path"] for r in aconn.execute("select * from match_lexical_chunks(%s)", (RARE,))}
    assert owner_hits == {"vault/hidden.md"}  # the owner finds it: the note is there
    for name, conn in readers.items():
        assert reachable(conn, suffix) == before[name], name
        refused_pg_textsearch(conn, aconn)
    assert key_view(settings) == key_before

    (tmp_path / "notes" / "vault" / "hidden.md").unlink()
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    assert set(NOTES) == {r["source_path"] for r in aconn.execute(
        "select source_path from documents d join vaults v on v.id = d.vault_id where v.name = 'notes'")}
    for name, conn in readers.items():
        assert reachable(conn, suffix) == before[name], name
    assert key_view(settings) == key_before
