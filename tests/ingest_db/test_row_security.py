"""Clearance in the database (issue 17): a console role sees only its clearance and vaults, whatever it runs.

Real notes indexed by the real CLI; the console role is made by `ragpg db console` and used through
psycopg and through psql; every match_* function and every content table is read as that role.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from tests.ingest_db.helpers import RAGPG, cli_env, indexed_filtered_terms
from tests.support.files import write_files

NOTES = {
    "open/garden.md": "# Garden\nTomatoes need sun and launch codes are not needed here.\n",
    "team/plan.md": "---\nconfidentiality: internal\n---\n# Plan\nTomatoes ship in the launch plan.\n",
    "vault/secret.md": "---\nconfidentiality: restricted\n---\n# Secret\nThe launch code is tomato seven.\n",
    "vault/broken.md": "---\nconfidentiality: [restricted]\n---\n# Broken\nTomato launch code eight.\n",
}
OTHER = {"elsewhere.md": "# Elsewhere\nTomatoes and launch codes from another vault.\n"}
PUBLIC_NOTES = {("notes", "open/garden.md")}
QUERY = "tomato launch code"


@pytest.fixture
def indexed(cli, tmp_path: Path) -> None:
    assert cli("vault", "add", "notes", str(write_files(tmp_path / "notes", NOTES)))[0] == 0
    assert cli("vault", "add", "other", str(write_files(tmp_path / "other", OTHER)))[0] == 0
    code, _, err = cli("index", "--quiet")
    assert code == 0, err


def console_conn(cli, *args: str) -> psycopg.Connection:
    code, out, err = cli("db", "console", *args, "--json", "--with-password")
    assert code == 0, err
    login = json.loads(out)
    return psycopg.connect(login["conninfo"], password=login["password"], autocommit=True, row_factory=dict_row)


def model_suffix(aconn: psycopg.Connection) -> str:
    return aconn.execute("select sql_name from embedding_models").fetchone()["sql_name"]


def call_every_match_function(conn: psycopg.Connection, suffix: str, embedding: str) -> dict[str, list[dict[str, Any]]]:
    """Every match_* function the database has, called as `conn`; the test fails when one is not covered."""
    calls = {
        f"match_native_chunks_{suffix}": ("select * from {}(%s::vector, 0, 50)", (embedding,)),
        f"match_hybrid_chunks_{suffix}": ("select * from {}(%s, %s::vector, 50)", (QUERY, embedding)),
        f"match_hybrid_multi_chunks_{suffix}": ("select * from {}(array[%s, 'seven'], array[%s::vector, %s::vector], 50)",
                                                (QUERY, embedding, embedding)),
        f"match_langchain_chunks_{suffix}": ("select * from {}(%s::vector, 0, 50)", (embedding,)),
        f"match_folders_{suffix}": ("select * from {}(%s::vector, null, 50)", (embedding,)),
        "match_lexical_chunks": ("select * from {}(%s, 50)", (QUERY,)),
        "ragpg_query_term_stats": ("select * from {}(%s)", (QUERY,)),
    }
    present = {r["proname"] for r in conn.execute("select proname from pg_proc where proname like 'match\\_%'")}
    assert present <= set(calls), f"match functions not covered by this test: {present - set(calls)}"
    out: dict[str, list[dict[str, Any]]] = {}
    for name, (template, params) in calls.items():
        query = psycopg.sql.SQL(template).format(psycopg.sql.Identifier(name))
        try:
            out[name] = conn.execute(query, params).fetchall()
        except psycopg.errors.InsufficientPrivilege:  # a peer library's tables ragpg never grants
            out[name] = []
    return out


def filtered_index_args(aconn: psycopg.Connection) -> dict[str, Any]:
    """ragpg_lexical_scores_indexed_filtered's term arrays for QUERY over the notes vault (read as the
    owner; they hold statistics, not text) and a filter every note passes."""
    row = indexed_filtered_terms(aconn, QUERY, ["notes"])
    compiled = aconn.execute("""select containment, predicate::text as predicate, vars
                                from ragpg_compile_filter('{"source_path": {"$gte": ""}}')""").fetchone()
    return {**row, **compiled}


def filtered_index_read(conn: psycopg.Connection, a: dict[str, Any]) -> dict[str, Any]:
    return conn.execute(
        "select * from ragpg_lexical_scores_indexed_filtered(%s, 10, 1000, %s, %s::regconfig[], %s, %s, %s, 0.9, 0.4,"
        " %s, %s::jsonpath, %s)",
        (QUERY, a["v"], [str(c) for c in a["c"]], a["l"], a["w"], a["a"], Jsonb(a["containment"]), a["predicate"],
         Jsonb(a["vars"]))).fetchone()


def public_chunk_ids(aconn: psycopg.Connection) -> set[int]:
    return {r["id"] for r in aconn.execute("select c.id from chunks c join documents d on d.id = c.document_id"
                                           " where d.source_path = 'open/garden.md'").fetchall()}


def test_public_console_role_finds_no_restricted_row(indexed: None, cli, aconn: psycopg.Connection) -> None:
    suffix = model_suffix(aconn)
    embedding = aconn.execute(psycopg.sql.SQL("select embedding::text as e from {} limit 1").format(
        psycopg.sql.Identifier(f"embeddings_{suffix}"))).fetchone()["e"]
    owner = call_every_match_function(aconn, suffix, embedding)
    assert {(r["vault"], r["source_path"]) for r in owner["match_lexical_chunks"]} >= {
        ("notes", "vault/secret.md"), ("other", "elsewhere.md")}  # the owner is not bound: the rows exist

    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        found = call_every_match_function(conn, suffix, embedding)
        for name in ("match_native_chunks_", "match_hybrid_chunks_", "match_hybrid_multi_chunks_",
                     "match_lexical_chunks"):
            rows = next(v for k, v in found.items() if k.startswith(name))
            assert {(r["vault"], r["source_path"]) for r in rows} == PUBLIC_NOTES, name
        assert {(r["vault"], r["folder"], r["chunk_count"]) for r in found[f"match_folders_{suffix}"]} == {
            ("notes", "open", 1)}
        assert {r["lexeme"]: r["chunk_frequency"] for r in found["ragpg_query_term_stats"]}.get("seven", 0) == 0
        # the bm25 index ranks with every chunk's statistics: its filtered read (56_bm25_filtered.sql) is
        # the owner's alone (pg_textsearch's functions are refused to the role, issue 29)
        args = filtered_index_args(aconn)
        owners = filtered_index_read(aconn, args)
        assert owners["complete"] is True and public_chunk_ids(aconn) < set(owners["chunk_ids"])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            filtered_index_read(conn, args)

        tables = {t: conn.execute(psycopg.sql.SQL("select count(*) as n from {}").format(
            psycopg.sql.Identifier(t))).fetchone()["n"] for t in
            ("documents", "chunks", "vaults", "bm25_postings", f"embeddings_{suffix}")}
        public_chunks = aconn.execute("select count(*) as n from chunks c join documents d on d.id = c.document_id "
                                      "where d.source_path = 'open/garden.md'").fetchone()["n"]
        assert tables["documents"] == 1 and tables["vaults"] == 1
        assert tables["chunks"] == public_chunks == tables[f"embeddings_{suffix}"]
        visible_postings = aconn.execute("select count(*) as n from bm25_postings p join chunks c on c.id = p.chunk_id "
                                         "join documents d on d.id = c.document_id "
                                         "where d.source_path = 'open/garden.md'").fetchone()["n"]
        assert tables["bm25_postings"] == visible_postings

        # The session settings narrow, never widen; the reader role and the registry are out of reach.
        conn.execute("set ragpg.clearance = 'restricted'")
        conn.execute("set ragpg.vaults = '*'")
        assert conn.execute("select count(*) as n from documents").fetchone()["n"] == 1
        for attempt in ("set role ragpg_reader", "select * from ragpg_console_roles", "select * from api_keys",
                        "insert into vaults (name, root_path) values ('x', '/x')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(attempt)


def test_console_roles_by_clearance_and_narrowing_setting(indexed: None, cli) -> None:
    def visible(conn: psycopg.Connection) -> set[tuple[str, str]]:
        return {(r["vault"], r["source_path"]) for r in conn.execute(
            "select v.name as vault, d.source_path from documents d join vaults v on v.id = d.vault_id")}

    with console_conn(cli, "--clearance", "internal") as conn:
        assert visible(conn) == PUBLIC_NOTES | {("notes", "team/plan.md"), ("other", "elsewhere.md")}
        conn.execute("""set ragpg.vaults = '["other"]'""")
        assert visible(conn) == {("other", "elsewhere.md")}
        conn.execute("set ragpg.vaults = 'not json'")  # a setting that does not parse narrows to nothing
        assert visible(conn) == set()
    with console_conn(cli, "--clearance", "restricted", "--vault", "notes") as conn:
        # an unparseable confidentiality was stored restricted, so only the top clearance reads it
        assert visible(conn) == {("notes", p) for p in NOTES}
        conn.execute("set ragpg.clearance = 'bogus'")
        assert visible(conn) == set()


def test_a_role_ragpg_did_not_make_sees_nothing(indexed: None, aconn: psycopg.Connection, db_url: str) -> None:
    aconn.execute("drop role if exists ragpg_test_stranger")
    aconn.execute("create role ragpg_test_stranger login password 'stranger'")
    try:
        aconn.execute("grant select on documents, chunks, vaults to ragpg_test_stranger")
        info = psycopg.conninfo.conninfo_to_dict(db_url)
        info.update(user="ragpg_test_stranger", password="stranger")
        with psycopg.connect(**info, autocommit=True) as conn:
            conn.execute("set ragpg.clearance = 'restricted'")
            conn.execute("set ragpg.vaults = '*'")
            assert conn.execute("select count(*) from documents").fetchone()[0] == 0
            assert conn.execute("select count(*) from chunks").fetchone()[0] == 0
    finally:
        aconn.execute("drop owned by ragpg_test_stranger")
        aconn.execute("drop role ragpg_test_stranger")


def test_db_console_opens_psql_bound_to_the_role(indexed: None, db_url: str, tmp_path: Path) -> None:
    done = subprocess.run([*RAGPG, "db", "console", "--clearance", "public", "--vault", "notes", "--",
                           "-At", "-c", "select source_path from documents order by 1"],
                          capture_output=True, text=True, env=cli_env(db_url, tmp_path), timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["open/garden.md"]
    assert "clearance public, notes" in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--clearance", "top"], "unknown clearance 'top' (use one of: public, internal, confidential, restricted)"),
    (["--clearance", "public", "--vault", "nope"], "unknown vault 'nope' (known: notes, other)"),
    (["--clearance", "public", "--with-password"], "--with-password only goes with --json"),
])
def test_db_console_bad_input(indexed: None, cli, aconn: psycopg.Connection, args: list[str], message: str) -> None:
    roles = aconn.execute("select count(*) from ragpg_console_roles").fetchone()["count"]
    code, out, err = cli("db", "console", *args)
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [f"error: {message}"]
    assert aconn.execute("select count(*) from ragpg_console_roles").fetchone()["count"] == roles


def test_scoped_reads_hold_even_when_the_filter_loses_the_scope(indexed: None, settings, monkeypatch) -> None:
    """The server's scoped connection reads as ragpg_reader: a filter without the scope's conditions
    (a bug in filter composition, or a caller's `$or` trick) still finds nothing outside the scope."""
    from rag.access import Scope
    from rag.compute import compute_context
    from rag.notes.ask import search
    from rag.runtime import Runtime

    rt = Runtime(settings)
    try:
        public_notes = Scope(vaults=("notes",), clearance="public", principal="key:test")
        monkeypatch.setattr(Scope, "restrict_filter", lambda self, filter_, vaults: dict(filter_ or {}))
        for profile in ("chat", "notes"):
            result = compute_context(QUERY, profile=profile, mode="base", runtime=rt, scope=public_notes,
                                     filters={"$or": [{"confidentiality": "restricted"}, {"vault": "other"}]})
            assert {(c.candidate.vault, c.candidate.source_path) for c in result.ranked} <= PUBLIC_NOTES
        found = search(QUERY, runtime=rt, scope=public_notes)
        assert {(i.vault, i.source_path) for i in found.items} == PUBLIC_NOTES
        # The pooled connection goes back as the owner: an unrestricted caller reads everything again.
        everything = compute_context(QUERY, mode="base", runtime=rt)
        assert ("notes", "vault/secret.md") in {(c.candidate.vault, c.candidate.source_path) for c in everything.ranked}
        with rt.connection() as conn:
            row = conn.execute("select current_user as who, current_setting('ragpg.clearance', true) as c").fetchone()
        assert row["who"] != "ragpg_reader" and not row["c"]
    finally:
        rt.close()


def test_the_servers_reader_gets_no_hidden_vector_scores_unfiltered(indexed: None, aconn: psycopg.Connection) -> None:
    """ragpg_reader reads embeddings without a per-row check (the chunk join decides): an unfiltered
    vector search, or an exact scan of ids it names, called as it must still keep to the chunks its
    scope reads."""
    model = aconn.execute("select embedding_table, dims, provider || ':' || model as name "
                          "from embedding_models order by id limit 1").fetchone()
    secret = aconn.execute(sql.SQL("select e.embedding from {} e join chunks c on c.id = e.chunk_id "
                                   "join documents d on d.id = c.document_id where d.source_path = 'vault/secret.md'")
                           .format(sql.Identifier(model["embedding_table"]))).fetchone()["embedding"]
    call = ("select chunk_id from ragpg_vector_scores(%s, %s, %s, %s::vector, -1, 50, '{}'::jsonb, 10000, 40)")
    args = (model["embedding_table"], model["dims"], model["name"], secret)
    everything = {r["chunk_id"] for r in aconn.execute(call, args)}
    rows = aconn.execute("select id, vault_id from chunks order by id").fetchall()
    ids, vaults = [r["id"] for r in rows], [r["vault_id"] for r in rows]
    secret_vault = aconn.execute("select id from vaults where name = 'notes'").fetchone()["id"]
    assert aconn.execute(  # the owner scores the secret note's word
        "select count(*) as n from ragpg_bm25_exact_scores(%s, %s, %s, array['english']::regconfig[], "
        "array['seven'], array[1.0], array[10.0], 0.9, 0.4)", (ids, vaults, [secret_vault])).fetchone()["n"] >= 1
    aconn.execute("select set_config('role', 'ragpg_reader', false), set_config('ragpg.clearance', 'public', false), "
                  "set_config('ragpg.vaults', '*', false)")
    try:
        visible = {r["id"] for r in aconn.execute("select id from chunks")}
        found = {r["chunk_id"] for r in aconn.execute(call, args)}
        listed = {r["chunk_id"] for r in aconn.execute(  # every chunk's id, as a caller may list them
            "select chunk_id from ragpg_vector_exact_scores(%s, %s::vector, 50, -1, %s, null)",
            (model["embedding_table"], secret, sorted(everything)))}
        scored = {r["chunk_id"] for r in aconn.execute(  # BM25 of a word only the secret note holds
            "select chunk_id from ragpg_bm25_exact_scores(%s, %s, %s, array['english']::regconfig[], "
            "array['seven'], array[1.0], array[10.0], 0.9, 0.4)", (ids, vaults, [secret_vault]))}
    finally:
        aconn.execute("reset role; reset ragpg.clearance; reset ragpg.vaults")
    assert visible and visible < everything  # the reader's scope hides some
    assert scored == set()
    assert found and found <= visible
    assert listed and listed <= visible


def test_a_console_role_reading_chunk_rows_of_every_vault_by_guessed_ids_gets_its_own_alone(
        indexed: None, cli, aconn: psycopg.Connection) -> None:
    """ragpg_chunk_rows for several vaults (one cached plan, each document read by its chunk's key) and
    the bm25 exact scores (one cached plan): a role asking for every chunk id of every vault, hidden
    ones included, reads and scores only the chunks its policy keeps."""
    every_id = [r["id"] for r in aconn.execute("select id from chunks order by id").fetchall()]
    every_vault = [r["id"] for r in aconn.execute("select id from vaults order by id").fetchall()]
    chunk_vaults = [r["vault_id"] for r in aconn.execute("select vault_id from chunks order by id").fetchall()]
    assert len(every_vault) == 2 and len(every_id) > len(public_chunk_ids(aconn))
    owner = aconn.execute("select chunk_id, source_path from ragpg_chunk_rows(%s, %s)", (every_id, every_vault))
    assert len(owner.fetchall()) == len(every_id)  # the owner is not bound: every row is there
    scoring = ("select chunk_id from ragpg_bm25_exact_scores(%s, %s, %s, array['english'::regconfig, 'english'],"
               " array['launch', 'launch'], array[1.0, 1.0], array[10.0, 10.0], 0.9, 0.4)")
    both = [every_vault[0], every_vault[1]]
    assert {r["chunk_id"] for r in aconn.execute(scoring, (every_id, chunk_vaults, both))} > public_chunk_ids(aconn)
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        rows = conn.execute("select chunk_id, vault, source_path from ragpg_chunk_rows(%s, %s)",
                            (every_id, every_vault)).fetchall()
        assert {r["chunk_id"] for r in rows} == public_chunk_ids(aconn)
        assert {(r["vault"], r["source_path"]) for r in rows} == PUBLIC_NOTES
        scored = {r["chunk_id"] for r in conn.execute(scoring, (every_id, chunk_vaults, both))}
        assert scored <= public_chunk_ids(aconn) and scored
