"""match_lexical_chunks: BM25 against a hand computation, per-vault stats and configs, odd queries."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import PurePosixPath

import psycopg
import pytest

from rag.errors import InputError
from rag.retrieval import retrieve
from rag.store import calls
from tests.retrieval.corpus import add_chunks, add_document, add_vault

K1, B = 0.9, 0.4

PLAIN_DOCS = {
    "cats.md": ["the cat sat on the mat", "a cat and another cat and a dog"],
    "dogs.md": ["dogs chase cats", "the dog barked at the mailman all day long and then slept"],
    "birds.md": ["birds sing", "no animals here at all just words words words"],
}


def tokens(text: str) -> list[str]:
    """The 'simple' configuration on plain lower-case words: split on non-alphanumerics."""
    return re.findall(r"[a-z0-9]+", text.lower())


def bm25_reference(docs: dict[int, Counter], query: Counter, k1: float = K1, b: float = B) -> dict[int, float]:
    """Lucene's BM25 (the formula Pyserini uses), with query term frequencies as weights."""
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in docs.values()) / n
    scores: dict[int, float] = {}
    for doc_id, counts in docs.items():
        dl = sum(counts.values())
        total = 0.0
        for term, qtf in query.items():
            tf = counts.get(term, 0)
            if not tf:
                continue
            df = sum(1 for c in docs.values() if term in c)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += qtf * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        if total:
            scores[doc_id] = total
    return scores


def db_counts(conn, vault: str) -> dict[int, Counter]:
    """Each chunk's lexeme counts as stored in its tsvector."""
    rows = conn.execute(
        "select c.id, u.lexeme, cardinality(u.positions) as n from chunks c join vaults v on v.id = c.vault_id"
        " cross join lateral unnest(c.content_tsv) u where v.name = %s", (vault,)).fetchall()
    out: dict[int, Counter] = {}
    for r in rows:
        out.setdefault(r["id"], Counter())[r["lexeme"]] = r["n"]
    for r in conn.execute("select c.id from chunks c join vaults v on v.id = c.vault_id where v.name = %s",
                          (vault,)).fetchall():
        out.setdefault(r["id"], Counter())
    return out


def query_counts(conn, config: str, text: str) -> Counter:
    rows = conn.execute("select lexeme, cardinality(positions) as n from unnest(to_tsvector(%s::regconfig, %s))",
                        (config, text)).fetchall()
    return Counter({r["lexeme"]: r["n"] for r in rows})


def assert_scores(rows, expected: dict[int, float]) -> None:
    got = {r.chunk_id: r.bm25_score for r in rows}
    assert set(got) == set(expected)
    for chunk_id, score in expected.items():
        assert got[chunk_id] == pytest.approx(score, rel=1e-9, abs=1e-6)
    scores = [r.bm25_score for r in rows]
    assert scores == sorted(scores, reverse=True)


@pytest.fixture
def plain(conn):
    """A 'simple'-config vault whose lexemes are exactly the lower-case words."""
    vault_id = add_vault(conn, "plain", config="simple")
    texts: dict[int, str] = {}
    for path, contents in PLAIN_DOCS.items():
        doc = add_document(conn, vault_id, path)
        for chunk_id, text in zip(add_chunks(conn, doc, contents, heading_path="Notes"), contents, strict=True):
            texts[chunk_id] = f"{PurePosixPath(path).stem} Notes {text}"  # BM25 reads the note's name first
    return texts


def test_bm25_matches_a_hand_computation(conn, plain):
    docs = {cid: Counter(tokens(text)) for cid, text in plain.items()}
    for query in ("cat", "the cat cat dog", "words", "mailman dog", "notes"):
        rows = retrieve.match_lexical(conn, query, match_count=100)
        assert_scores(rows, bm25_reference(docs, Counter(tokens(query))))
    for k1, b in ((1.2, 0.75), (0.0, 0.0), (2.0, 1.0)):
        rows = retrieve.match_lexical(conn, "the cat dog", match_count=100, k1=k1, b=b)
        assert_scores(rows, bm25_reference(docs, Counter(tokens("the cat dog")), k1, b))


def test_bm25_statistics_stay_exact_after_deletes_inserts_and_updates(conn, plain):
    doc = conn.execute("select id from documents where source_path = 'cats.md'").fetchone()["id"]
    conn.execute("delete from chunks where document_id = %s and ordinal = 0", (doc,))
    conn.execute("delete from chunks where content like 'birds%%'")
    add_chunks(conn, doc, ["cat cat cat", "a brand new dog"], start_ordinal=5)
    conn.execute("update chunks set content = 'dogs and cats and more cats' where content = 'dogs chase cats'")
    texts = {r["id"]: r["text"] for r in conn.execute(  # the text BM25 reads: the note's name, heading, content
        "select id, ragpg_chunk_search_text(heading_path, content, metadata) as text from chunks").fetchall()}
    docs = {cid: Counter(tokens(text)) for cid, text in texts.items()}
    stats = conn.execute("select chunk_count, total_length from bm25_vault_stats").fetchone()
    assert stats == {"chunk_count": len(docs), "total_length": sum(sum(c.values()) for c in docs.values())}
    for query in ("cat", "dog cats", "the mat words"):
        assert_scores(retrieve.match_lexical(conn, query, match_count=100),
                      bm25_reference(docs, Counter(tokens(query))))
    conn.execute("delete from chunks")
    assert retrieve.match_lexical(conn, "cat") == []
    assert conn.execute("select count(*) as n from bm25_term_stats").fetchone()["n"] == 0


def test_english_vault_scores_with_its_own_lexemes(conn):
    vault_id = add_vault(conn, "en", config="english")
    doc = add_document(conn, vault_id, "a.md")
    add_chunks(conn, doc, ["Running dogs were chasing the cats.", "A cat runs; the dog sleeps.",
                           "Databases index their tables", "The running of the bulls, run run run!"])
    docs = db_counts(conn, "en")
    for query in ("running cats", "dog", "indexing the databases", "RUN"):
        assert_scores(retrieve.match_lexical(conn, query, match_count=100),
                      bm25_reference(docs, query_counts(conn, "english", query)))


def test_statistics_and_configs_are_per_vault(conn):
    en = add_vault(conn, "en", config="english")
    si = add_vault(conn, "si", config="simple")
    add_chunks(conn, add_document(conn, en, "x.md"), ["running dogs", "quiet cats", "cats and dogs"])
    add_chunks(conn, add_document(conn, si, "x.md"), ["running dogs", "the running man"])
    rows = retrieve.match_lexical(conn, "running", match_count=100)
    by_vault = {(r.vault, r.content): r.bm25_score for r in rows}
    assert set(by_vault) == {("en", "running dogs"), ("si", "running dogs"), ("si", "the running man")}
    en_expected = bm25_reference(db_counts(conn, "en"), query_counts(conn, "english", "running"))
    si_expected = bm25_reference(db_counts(conn, "si"), query_counts(conn, "simple", "running"))
    assert_scores([r for r in rows if r.vault == "en"], en_expected)
    assert_scores([r for r in rows if r.vault == "si"], si_expected)
    # 'the' is an English stopword but a word of the simple config
    assert {r.vault for r in retrieve.match_lexical(conn, "the", match_count=100)} == {"si"}
    assert retrieve.match_lexical(conn, "the and of", filter={"vault": "en"}) == []
    only_si = retrieve.match_lexical(conn, "running", match_count=100, filter={"vault": "si"})
    assert {r.vault for r in only_si} == {"si"} and len(only_si) == 2


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", None])
def test_empty_query_text_is_a_clear_error_in_python_and_sql(conn, plain, text):
    with pytest.raises(InputError, match="^query text is empty$"):
        retrieve.match_lexical(conn, text)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err, conn.transaction():
        conn.execute("select * from match_lexical_chunks(%s)", (text,))
    assert err.value.diag.message_primary == "query_text is empty"
    assert type(calls.map_database_error(err.value)) is InputError
    assert len(retrieve.match_lexical(conn, "cat", match_count=100)) == 2  # nothing lost, connection usable


def test_query_without_searchable_words_gives_an_empty_result(conn, plain):
    assert retrieve.match_lexical(conn, "!!! ??? ...") == []
    assert conn.execute("select * from match_lexical_chunks('!!! ???')").fetchall() == []


def test_stopword_only_query_on_an_english_vault(conn):
    add_chunks(conn, add_document(conn, add_vault(conn, "en"), "a.md"), ["the cat and the hat"])
    assert retrieve.match_lexical(conn, "the of and a") == []
    assert conn.execute("select * from match_lexical_chunks('the of and a')").fetchall() == []


@pytest.mark.parametrize("text", [
    "it's a \\ test 'quoted' \"x\" & | ! :* <-> ( )",
    "http://example.com/a?b=1&c=2 user@example.com",
    "'); drop table chunks; --",
    "Ünïcödé façade naïve — ✓ 日本語",
    "a:* & b | !c",
])
def test_odd_query_text_never_breaks_the_tsquery(conn, plain, text):
    before = conn.execute("select count(*) as n from chunks").fetchone()["n"]
    retrieve.match_lexical(conn, text, match_count=10)
    assert conn.execute("select count(*) as n from chunks").fetchone()["n"] == before


def test_bad_lexical_arguments(conn, plain):
    for kwargs, message in (({"match_count": 0}, "match_count must be between 1 and 1000"),
                            ({"match_count": 5000}, "match_count must be between 1 and 1000"),
                            ({"k1": -1}, "k1 must be between 0 and 1000"),
                            ({"b": 1.5}, "b must be between 0 and 1"),
                            ({"b": float("nan")}, "b must be between 0 and 1")):
        with pytest.raises(InputError, match=re.escape(message)):
            retrieve.match_lexical(conn, "cat", **kwargs)
    with pytest.raises(InputError, match="query text is 20001 characters long"):
        retrieve.match_lexical(conn, "x" * 20001)
    with pytest.raises(InputError, match="query text must be a string"):
        retrieve.match_lexical(conn, 42)
    with pytest.raises(InputError):
        retrieve.match_lexical(conn, "cat\x00dog")
    assert len(retrieve.match_lexical(conn, "cat", match_count=2)) == 2


def test_candidates_come_from_the_indexes(conn):
    """A rare term's postings are read from bm25_postings_pkey, a selective containment filter goes through
    chunks_metadata_idx."""
    from tests.retrieval.test_vector import _auto_explain

    vault_id = add_vault(conn, "big")
    doc = add_document(conn, vault_id, "big.md")
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content, metadata)"
                 " select %s, %s, g, 'common words number ' || g || case when g %% 500 = 0 then ' zyzzyva' else '' end,"
                 "        jsonb_build_object('kind', case when g %% 500 = 0 then 'rare' else 'usual' end)"
                 " from generate_series(0, 2999) g", (doc, vault_id))
    conn.execute("select gin_clean_pending_list(i.inhrelid::regclass) from pg_inherits i"  # each vault's
                 " where i.inhparent = 'chunks_metadata_idx'::regclass")
    conn.execute("analyze chunks; analyze bm25_postings; analyze bm25_term_stats")
    plans = _auto_explain(conn)
    if plans is None:
        pytest.skip("auto_explain cannot be loaded on this server")
    rows = retrieve.match_lexical(conn, "zyzzyva", match_count=10)
    assert len(rows) == 6
    assert any(re.search(r"Index Only Scan using bm25_postings_(p\d+|shared)_pkey", p) and "scored as materialized" in p for p in plans)
    plans.clear()
    rows = retrieve.match_lexical(conn, "common", match_count=10, filter={"kind": "rare"})
    assert len(rows) == 6
    assert any("chunks_metadata_idx" in p and "scored as materialized" in p for p in plans)
