"""Folder centroids, model registration, and the LangChain function without LangChain's tables."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from psycopg import sql

from rag.errors import InputError, NotFoundError
from rag.retrieval import retrieve
from rag.store import models
from tests.retrieval.corpus import (
    add_chunks,
    add_document,
    add_embeddings,
    add_vault,
    cosine,
    hash_embedding,
    random_unit_vectors,
)

DIMS = 12


def test_folders_rank_by_similarity_to_their_mean_embedding(conn):
    model = models.register_model(conn, "hash", "folder-test", DIMS)
    rng = np.random.default_rng(11)
    centroids: dict[tuple[str, str], list[np.ndarray]] = {}
    for vault in ("v1", "v2"):
        vault_id = add_vault(conn, vault)
        for folder in ("", "Projects", "Projects/Alpha", "Journal"):
            doc = add_document(conn, vault_id, f"{folder}/a.md" if folder else "a.md", folder=folder)
            ids = add_chunks(conn, doc, ["x", "y", "z"])
            vectors = random_unit_vectors(rng, len(ids), DIMS)
            add_embeddings(conn, model, zip(ids, vectors, strict=True))
            centroids[(vault, folder)] = list(vectors)
    query = rng.standard_normal(DIMS).astype(np.float32)
    expected = sorted(((cosine(np.mean(vs, axis=0), query), key) for key, vs in centroids.items()),
                      key=lambda x: -x[0])
    rows = retrieve.match_folders(conn, model, query)
    assert [(r.vault, r.folder) for r in rows] == [key for _, key in expected]
    for row, (similarity, _) in zip(rows, expected, strict=True):
        assert row.similarity == pytest.approx(similarity, abs=1e-5)
        assert row.chunk_count == 3 and isinstance(row, retrieve.FolderMatch)
    only_v2 = retrieve.match_folders(conn, model, query, vaults=["v2"], match_count=2)
    assert [(r.vault, r.folder) for r in only_v2] == [k for _, k in expected if k[0] == "v2"][:2]
    with pytest.raises(NotFoundError, match=r"unknown vault 'v3' \(known: v1, v2\)"):
        retrieve.match_folders(conn, model, query, vaults="v3")
    with pytest.raises(InputError, match="match_count must be between 1 and 1000"):
        retrieve.match_folders(conn, model, query, match_count=0)
    with pytest.raises(InputError, match="expects 12"):
        retrieve.match_folders(conn, model, query[:3])


def test_register_and_get_model(conn):
    model = models.register_model(conn, "OpenAI", "text-embedding-3-small", 24)
    assert model.sql_name == "openai_text_embedding_3_small"
    assert model.match_function == "match_native_chunks_openai_text_embedding_3_small"
    assert model.hybrid_multi_function == "match_hybrid_multi_chunks_openai_text_embedding_3_small"
    assert models.get_model(conn, "OpenAI", "text-embedding-3-small") == model
    assert models.get_model(conn, "OpenAI", "nope") is None
    assert models.register_model(conn, "OpenAI", "text-embedding-3-small", 24) == model
    assert model in models.list_models(conn)
    with pytest.raises(InputError, match="registered with 24 dims, not 12"):
        models.register_model(conn, "OpenAI", "text-embedding-3-small", 12)
    with pytest.raises(InputError, match="between 1 and 2000"):
        models.register_model(conn, "x", "y", 0)
    with pytest.raises(InputError, match="must be an integer"):
        models.register_model(conn, "x", "y", "384")
    # regenerating keeps exactly one function per name (no overloads left behind)
    conn.execute("select ragpg_refresh_model_functions()")
    names = [model.match_function, model.langchain_function, model.hybrid_function, model.hybrid_multi_function,
             model.folders_function]
    counts = conn.execute("select proname, count(*) as n from pg_proc where proname = any(%s) group by proname",
                          (names,)).fetchall()
    assert sorted((r["proname"], r["n"]) for r in counts) == sorted((n, 1) for n in names)


def test_long_model_names_fit_postgres_identifiers(conn):
    model = models.register_model(conn, "ollama", "a-very-long-embedding-model-name-for-testing-limits:latest", 4)
    assert len(model.hybrid_multi_function.encode()) <= 63
    vault_id = add_vault(conn, "lv")
    ids = add_chunks(conn, add_document(conn, vault_id, "a.md"), ["one"])
    add_embeddings(conn, model, [(ids[0], [1, 0, 0, 0])])
    assert [r.chunk_id for r in retrieve.match_vector(conn, model, [1, 0, 0, 0])] == ids
    assert [r.chunk_id for r in retrieve.match_hybrid_multi(conn, model, ["one"], [[1, 0, 0, 0]])] == ids


def test_langchain_function_is_empty_without_langchain_tables(conn):
    model = models.register_model(conn, "hash", "lc-absent", 4)
    assert retrieve.match_langchain(conn, model, [1, 0, 0, 0]) == []
    with pytest.raises(InputError, match="query embedding has 3 dimensions, model hash/lc-absent expects 4"):
        retrieve.match_langchain(conn, model, [1, 0, 0])
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="invalid filter"), conn.transaction():
        conn.execute(sql.SQL("select * from {}('[1,0,0,0]', 0, 10, '{{\"$x\": 1}}')").format(
            sql.Identifier(model.langchain_function)))


def test_missing_functions_are_a_database_error(conn):
    model = models.register_model(conn, "hash", "dropped", 4)
    conn.execute(sql.SQL("drop function {}").format(sql.Identifier(model.match_function)))
    from rag.errors import DatabaseError

    with pytest.raises(DatabaseError, match="ragpg db upgrade"):
        retrieve.match_vector(conn, model, hash_embedding("x", 4))
