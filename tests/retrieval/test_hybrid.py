"""Hybrid (RRF) functions: ranks and scores recomputed from match_native + match_lexical outputs."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from rag.errors import InputError
from rag.retrieval import retrieve
from rag.store import models
from tests.retrieval.corpus import add_chunks, add_document, add_vault, embed_chunks, hash_embedding

DIMS = 32
TEXTS = [
    "cats chase mice in the barn", "dogs chase cats around the yard", "a database index speeds up queries",
    "postgres stores tables and indexes", "the cat sleeps all day", "vector search finds similar embeddings",
    "full text search ranks documents with bm25", "hybrid search fuses vector and keyword rankings",
    "mice eat cheese", "the barn is red", "queries over tables with indexes", "dogs bark at night",
    "embeddings of cats and dogs", "reciprocal rank fusion of rankings", "keyword search with postgres",
    "cheese and crackers", "night sky stars", "documents about search", "a cat and a dog", "red barn doors",
]


@pytest.fixture
def mixed(conn):
    model = models.register_model(conn, "hash", "hybrid-test", DIMS)
    ids: list[int] = []
    for v, vault in enumerate(("h1", "h2")):
        vault_id = add_vault(conn, vault)
        for d in range(5):
            doc = add_document(conn, vault_id, f"notes/doc{d}.md")
            ids += add_chunks(conn, doc, TEXTS[v * 10 + d * 2: v * 10 + d * 2 + 2], metadata={"group": d % 2})
    embed_chunks(conn, model, ids)
    return model


def reference(vector_lists, lexical_lists, *, rrf_k=60, weights=(1.0, 1.0)):
    """Per chunk: best vector rank, best similarity, best lexical rank, best bm25, fused score, hits."""
    out: dict[int, dict] = {}
    legs = (("vr", "sim", "vh", "similarity", weights[0], vector_lists),
            ("lr", "bm", "lh", "bm25_score", weights[1], lexical_lists))
    for rank_key, score_key, hits_key, score_field, weight, lists in legs:
        for rows in lists:
            for rank, r in enumerate(rows, 1):
                e = out.setdefault(r.chunk_id, {"vr": None, "sim": None, "lr": None, "bm": None, "score": 0.0,
                                                "vh": 0, "lh": 0})
                e[rank_key] = rank if e[rank_key] is None else min(e[rank_key], rank)
                score = getattr(r, score_field)
                e[score_key] = score if e[score_key] is None else max(e[score_key], score)
                e["score"] += weight / (rrf_k + rank)
                e[hits_key] += 1
    return out


def check_fused(rows, ref, match_count):
    assert rows, "no rows"
    for r in rows:
        e = ref[r.chunk_id]
        assert (r.vector_rank, r.lexical_rank) == (e["vr"], e["lr"])
        assert r.similarity == (pytest.approx(e["sim"], abs=1e-12) if e["sim"] is not None else None)
        assert r.bm25_score == (pytest.approx(e["bm"], abs=1e-12) if e["bm"] is not None else None)
        assert r.rrf_score == pytest.approx(e["score"], abs=1e-12)
        assert (r.vector_hits, r.lexical_hits) == (e["vh"], e["lh"])
    scores = [r.rrf_score for r in rows]
    assert scores == sorted(scores, reverse=True)
    expected = sorted(ref.values(), key=lambda e: -e["score"])
    assert len(rows) == min(match_count, len(ref))
    if len(expected) > len(rows):  # everything scoring above the cut is in, nothing below it
        cut = rows[-1].rrf_score
        above = {cid for cid, e in ref.items() if e["score"] > cut + 1e-12}
        assert above <= {r.chunk_id for r in rows}
        assert all(r.rrf_score >= expected[len(rows)]["score"] - 1e-12 for r in rows)


@pytest.mark.parametrize(("kwargs", "weights"), [
    ({}, (1.0, 1.0)),
    ({"weights": {"vector": 2, "lexical": 0.5}}, (2.0, 0.5)),
    ({"weights": {"lexical": 3}}, (1.0, 3.0)),
    ({"rrf_k": 1}, (1.0, 1.0)),
    ({"candidate_count": 5}, (1.0, 1.0)),
    ({"filter": {"group": 1}}, (1.0, 1.0)),
    ({"similarity_threshold": 0.2}, (1.0, 1.0)),
])
def test_hybrid_ranks_are_the_component_rankings_fused(conn, mixed, kwargs, weights):
    text = "cats and dogs chase mice"
    embedding = hash_embedding("search rankings with cats", DIMS)
    candidate_count = kwargs.get("candidate_count", 60)
    filter_ = kwargs.get("filter")
    vector = retrieve.match_vector(conn, mixed, embedding, match_count=candidate_count, filter=filter_,
                                   similarity_threshold=kwargs.get("similarity_threshold", 0.0))
    lexical = retrieve.match_lexical(conn, text, match_count=candidate_count, filter=filter_)
    assert vector and lexical
    ref = reference([vector], [lexical], rrf_k=kwargs.get("rrf_k", 60), weights=weights)
    rows = retrieve.match_hybrid(conn, mixed, text, embedding, match_count=8, **kwargs)
    assert all(isinstance(r, retrieve.HybridMatch) for r in rows)
    check_fused(rows, ref, 8)


def test_equal_scores_are_ranked_by_path_and_ordinal(conn):
    """Chunks with the same text tie on similarity and on BM25: each list, and the fused order, ranks
    them by source_path and ordinal, not by id (they are inserted last path first)."""
    model = models.register_model(conn, "hash", "tie-test", DIMS)
    vault_id = add_vault(conn, "ties")
    ids: list[int] = []
    for path in ("z/last.md", "a/first.md", "m/middle.md"):
        ids += add_chunks(conn, add_document(conn, vault_id, path), ["compost heap turned weekly"] * 2)
    ids += add_chunks(conn, add_document(conn, vault_id, "b/other.md"), ["mulch keeps the soil damp"])
    embed_chunks(conn, model, ids)
    embedding = hash_embedding("compost heap", DIMS)
    rows = retrieve.match_hybrid(conn, model, "compost heap", embedding, match_count=4, similarity_threshold=-1)
    expected = [("a/first.md", 0), ("a/first.md", 1), ("m/middle.md", 0), ("m/middle.md", 1)]
    assert [(r.source_path, r.chunk_ordinal) for r in rows] == expected
    assert [(r.vector_rank, r.lexical_rank) for r in rows] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    vector = retrieve.match_vector(conn, model, embedding, match_count=4, similarity_threshold=-1)
    lexical = retrieve.match_lexical(conn, "compost heap", match_count=4)
    assert [(r.source_path, r.chunk_ordinal) for r in vector] == expected
    assert [(r.source_path, r.chunk_ordinal) for r in lexical] == expected
    assert len({r.similarity for r in rows}) == 1 and len({r.bm25_score for r in rows}) == 1
    multi = retrieve.match_hybrid_multi(conn, model, ["compost heap", "heap of compost"], [embedding, embedding],
                                        match_count=4, similarity_threshold=-1)
    assert [(r.source_path, r.chunk_ordinal, r.vector_rank, r.lexical_rank) for r in multi] == \
        [(p, o, i, i) for i, (p, o) in enumerate(expected, 1)]


def test_hybrid_without_usable_text_is_the_vector_ranking(conn, mixed):
    embedding = hash_embedding("cheese", DIMS)
    vector = retrieve.match_vector(conn, mixed, embedding, match_count=60)[:10]  # the same candidate list
    for text in ("", "   ", "the of and", None):
        rows = retrieve.match_hybrid(conn, mixed, text, embedding, match_count=10)
        assert [r.chunk_id for r in rows] == [r.chunk_id for r in vector]
        assert all(r.lexical_rank is None and r.bm25_score is None for r in rows)


def test_multi_query_fusion_in_one_call(conn, mixed):
    texts = ["cats chase mice", "database index tables", ""]
    embeddings = [hash_embedding(t or "red barn", DIMS) for t in texts]
    vector_lists = [retrieve.match_vector(conn, mixed, e, match_count=60) for e in embeddings]
    # an empty text has no lexical list (match_lexical itself refuses empty text)
    lexical_lists = [retrieve.match_lexical(conn, t, match_count=60) if t else [] for t in texts]
    ref = reference(vector_lists, lexical_lists)
    rows = retrieve.match_hybrid_multi(conn, mixed, texts, embeddings, match_count=12)
    assert all(isinstance(r, retrieve.HybridMatch) for r in rows)
    check_fused(rows, ref, 12)
    assert any(r.vector_hits >= 2 for r in rows)
    # a missing embedding leaves that query's vector list out
    rows = retrieve.match_hybrid_multi(conn, mixed, texts[:2], [embeddings[0], None], match_count=12)
    check_fused(rows, reference(vector_lists[:1], lexical_lists[:2]), 12)
    # one query: the SQL console's one-query function is the multi-query one with one query
    vector = str(list(map(float, embeddings[0])))
    single = conn.execute(sql.SQL("select * from {}(%s, %s::vector, 10)").format(
        sql.Identifier(mixed.hybrid_function)), (texts[0], vector)).fetchall()
    multi = conn.execute(sql.SQL("select * from {}(array[%s], array[%s::vector], 10)").format(
        sql.Identifier(mixed.hybrid_multi_function)), (texts[0], vector)).fetchall()
    assert single == multi and len(single) == 10
    # ... whose direct join of the two lists (ragpg_match_hybrid_one) gives what the general form gives
    # (a second query with neither text nor embedding adds no list, but takes the general form)
    one = retrieve.match_hybrid(conn, mixed, texts[0], embeddings[0], match_count=10)
    general = retrieve.match_hybrid_multi(conn, mixed, [texts[0], None], [embeddings[0], None], match_count=10)
    assert [retrieve.HybridMatch(**r) for r in single] == one == general


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"weights": {"vector": -1}}, "weight vector must be a finite number >= 0"),
    ({"weights": {"semantic": 1}}, "unknown weight 'semantic'"),
    ({"weights": {"vector": 0, "lexical": 0}}, "weights must not all be zero"),
    ({"weights": [1, 2]}, "weights must be a mapping"),
    ({"rrf_k": 0}, "rrf_k must be >= 1, got 0"),
    ({"candidate_count": 0}, "candidate_count must be between 1 and 1000, got 0"),
    ({"candidate_count": 1001}, "candidate_count must be between 1 and 1000"),
    ({"match_count": -1}, "match_count must be between 1 and 1000"),
    ({"similarity_threshold": 3}, "similarity_threshold must be between -1 and 1"),
    ({"k1": -0.5}, "k1 must be between 0 and 1000"),
    ({"filter": {"a": {"$nope": 1}}}, 'invalid filter: unknown operator "$nope"'),
])
def test_bad_hybrid_arguments(conn, mixed, kwargs, message):
    embedding = hash_embedding("x", DIMS)
    with pytest.raises(InputError) as err:
        retrieve.match_hybrid(conn, mixed, "cats", embedding, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError) as err:
        retrieve.match_hybrid_multi(conn, mixed, ["cats"], [embedding], **kwargs)
    assert message in str(err.value)


def test_bad_multi_query_shapes(conn, mixed):
    e = hash_embedding("x", DIMS)
    for texts, embeddings, message in (([], [], "between 1 and 32"), (["a"] * 33, [e] * 33, "between 1 and 32"),
                                       (["a", "b"], [e], "same length"),
                                       (["a", "b"], [e, e[:5]], "has 5 dimensions")):
        with pytest.raises(InputError, match=message):
            retrieve.match_hybrid_multi(conn, mixed, texts, embeddings)
    query = sql.SQL("select * from {}(array['a', 'b'], array[%s::vector])").format(
        sql.Identifier(mixed.hybrid_multi_function))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="same length"), conn.transaction():
        conn.execute(query, (f"[{','.join(['1'] * DIMS)}]",))
