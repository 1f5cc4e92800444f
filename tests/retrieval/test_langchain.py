"""match_langchain_chunks_<model> over tables written by the real langchain-postgres PGVector store."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from rag.retrieval import retrieve
from rag.store import models
from rag.store.database import open_connection, sqlalchemy_url
from tests.retrieval.corpus import hash_embedding

langchain_postgres = pytest.importorskip("langchain_postgres", reason="dev dependency langchain-postgres")
from langchain_core.embeddings import Embeddings  # noqa: E402

DIMS = 64
TOPICS = ["cats", "databases", "gardening"]
WORDS = {
    "cats": "cat kitten purr whiskers mouse",
    "databases": "postgres index table query vacuum",
    "gardening": "soil seeds water tomato compost",
}


class HashEmbeddings(Embeddings):
    """LangChain's side of the same deterministic embedding the SQL side is queried with."""

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [hash_embedding(t, self.dims).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return hash_embedding(text, self.dims).tolist()


def _texts() -> list[tuple[str, dict]]:
    out = []
    for t, topic in enumerate(TOPICS):
        words = WORDS[topic].split()
        for i in range(8):
            text = f"{words[i % 5]} {words[(i + 2) % 5]} note{t}x{i} about {topic} {words[(i * 3) % 5]}"
            meta = {"source": f"{topic}/note{i // 2}.md", "chunk_ordinal": i % 2, "heading_path": f"{topic} > part",
                    "topic": topic, "rank": t * 10 + i}
            out.append((text, meta))
    return out


@pytest.fixture(scope="module")
def langchain_db(pg_server) -> Iterator[tuple[object, models.EmbeddingModelRef, str]]:
    """LangChain's tables written by LangChain (committed), in a database of this module's own."""
    name = pg_server.create_database("langchain")
    db_url = pg_server.url(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = langchain_postgres.PGVector(embeddings=HashEmbeddings(DIMS), connection=sqlalchemy_url(db_url),
                                            collection_name="notes", use_jsonb=True)
        texts = _texts()
        store.add_texts([t for t, _ in texts], metadatas=[m for _, m in texts],
                        ids=[f"id-{i}" for i in range(len(texts))])
        other = langchain_postgres.PGVector(embeddings=HashEmbeddings(DIMS), connection=sqlalchemy_url(db_url),
                                            collection_name="other", use_jsonb=True)
        other.add_texts(["cat kitten purr in another collection"], metadatas=[{"topic": "cats"}], ids=["o-1"])
        small = langchain_postgres.PGVector(embeddings=HashEmbeddings(8), connection=sqlalchemy_url(db_url),
                                            collection_name="small-dims", use_jsonb=True)
        small.add_texts(["cat kitten purr with 8 dims"], metadatas=[{"topic": "cats"}], ids=["s-1"])
    with open_connection(db_url) as conn:
        model = models.register_model(conn, "hash", "langchain-test", DIMS)
        conn.commit()
    yield store, model, db_url
    for s in (store, other, small):
        s._engine.dispose()
    pg_server.drop_database(name)


@pytest.mark.parametrize("query", ["cat purr whiskers", "postgres index vacuum", "tomato compost water", "note"])
def test_same_top_results_as_langchain_similarity_search(langchain_db, query):
    store, model, db_url = langchain_db
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = store.similarity_search_with_score(query, k=6)
        theirs_filtered = store.similarity_search_with_score(query, k=4, filter={"topic": {"$eq": "databases"}})
    with open_connection(db_url) as conn:
        embedding = hash_embedding(query, DIMS)
        ours = retrieve.match_langchain(conn, model, embedding, match_count=6, similarity_threshold=-1,
                                        filter={"vault": "notes"})
        ours_filtered = retrieve.match_langchain(conn, model, embedding, match_count=4, similarity_threshold=-1,
                                                 filter={"vault": "notes", "topic": "databases"})
        everywhere = retrieve.match_langchain(conn, model, embedding, match_count=100, similarity_threshold=-1)
    by_content = {r.content: r for r in everywhere}
    for mine, their in ((ours, theirs), (ours_filtered, theirs_filtered)):
        assert len(mine) == len(their)
        # the same ranking: equal similarities position by position, and every result LangChain
        # returns has exactly that similarity on our side (equal vectors may swap places)
        for row, (_, distance) in zip(mine, their, strict=True):
            assert row.similarity == pytest.approx(1 - distance, abs=1e-6)
        strictly_above_cut = {r.content for r in mine if r.similarity > mine[-1].similarity + 1e-6}
        assert strictly_above_cut <= {doc.page_content for doc, _ in their}
        for doc, distance in their:
            row = by_content[doc.page_content]
            assert row.similarity == pytest.approx(1 - distance, abs=1e-6)
            assert row.source_path == doc.metadata["source"]
            assert row.chunk_ordinal == doc.metadata["chunk_ordinal"]
            assert row.heading_path == doc.metadata["heading_path"]
            assert row.metadata == doc.metadata and row.vault == "notes"
    # every collection of the model's dimension; the 8-dim collection is skipped, not an error
    assert {r.vault for r in everywhere} == {"notes", "other"} and len(everywhere) == len(_texts()) + 1
    assert len({r.chunk_id for r in everywhere}) == len(everywhere)


def test_langchain_rows_have_stable_ids_and_honour_threshold_and_errors(langchain_db):
    _, model, db_url = langchain_db
    embedding = hash_embedding("cat purr", DIMS)
    with open_connection(db_url) as conn:
        first = retrieve.match_langchain(conn, model, embedding, match_count=5)
        again = retrieve.match_langchain(conn, model, embedding, match_count=5)
        assert [r.chunk_id for r in first] == [r.chunk_id for r in again]
        assert all(r.similarity >= 0.5 for r in retrieve.match_langchain(conn, model, embedding,
                                                                           similarity_threshold=0.5))
        assert retrieve.match_langchain(conn, model, embedding, filter={"topic": "none"}) == []
        assert retrieve.match_langchain(conn, model, embedding, filter={"vault": "no-such-collection"}) == []
        with pytest.raises(retrieve.InputError, match="expects 64"):
            retrieve.match_langchain(conn, model, hash_embedding("x", 8))
        with pytest.raises(retrieve.InputError, match="invalid filter"):
            retrieve.match_langchain(conn, model, embedding, filter={"topic": {"$like": "c%"}})
