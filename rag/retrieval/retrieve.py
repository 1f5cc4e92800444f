"""Typed calls to the SQL retrieval functions (db/sql/30_filters.sql .. 70_folders.sql).

Every function takes an open psycopg connection and returns frozen dataclass rows. Per-model
function names come from the model's ``embedding_models`` row and are composed with
:class:`psycopg.sql.Identifier`; every value travels as a query parameter. Tunables default to
:class:`rag.config.RetrievalSettings`.

Errors: bad input (a filter, a vector of the wrong size, a count out of range) raises
:class:`rag.errors.InputError` with a one-line message, an unknown vault named in a filter raises
:class:`rag.errors.NotFoundError`, anything else from the database :class:`rag.errors.DatabaseError`.
No psycopg exception escapes; transactions and the error mapping are `rag.store.calls`. The
model registry (`register_model`, `get_model`) is `rag.store.models`.

Scores: ``similarity`` (1 - cosine distance), ``bm25_score`` and ``rrf_score`` are all
higher-is-better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import numpy as np
from psycopg import sql

from rag.arguments import check_query_length
from rag.config import RetrievalSettings
from rag.errors import InputError
from rag.retrieval.filters import filter_json
from rag.retrieval.query_vectors import vector_param, vector_text
from rag.store.calls import database_call, fetch_rows
from rag.store.database import Connection
from rag.store.models import EmbeddingModelRef
from rag.store.vaults import resolve_vault_names

#: Hard ceiling of the SQL functions (also HNSW's largest ef_search).
SQL_MAX_MATCH_COUNT = 1000
#: Most queries one multi-query hybrid call fuses.
MAX_MULTI_QUERIES = 32

# -- rows ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChunkMatch:
    """The chunk fields every match function returns (its score columns are in the subclasses)."""

    chunk_id: int
    vault: str
    source_path: str
    chunk_ordinal: int
    heading_path: str
    content: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class VectorMatch(ChunkMatch):
    similarity: float


@dataclass(frozen=True)
class LexicalMatch(ChunkMatch):
    bm25_score: float


@dataclass(frozen=True)
class HybridMatch(ChunkMatch):
    """A fused result: the chunk's best rank and score over the vector lists and over the lexical
    lists (None when no list of that kind held it), the fused score, and how many lists of each kind
    held it (one query: 0 or 1 each)."""

    vector_rank: int | None
    similarity: float | None
    lexical_rank: int | None
    bm25_score: float | None
    rrf_score: float
    vector_hits: int
    lexical_hits: int


@dataclass(frozen=True)
class FolderMatch:
    vault_id: int
    vault: str
    folder: str
    chunk_count: int
    similarity: float


@dataclass(frozen=True)
class CompiledFilter:
    """What ``ragpg_compile_filter`` makes of a filter (for debugging and the console docs)."""

    containment: dict[str, Any]
    predicate: str | None
    vars: dict[str, Any]
    vaults: list[str] | None


_CHUNK_COLUMNS = "chunk_id, vault, source_path, chunk_ordinal, heading_path, content, metadata"



# -- input checks -------------------------------------------------------------------------------

def _settings(settings: RetrievalSettings | None) -> RetrievalSettings:
    return settings if settings is not None else RetrievalSettings()


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _check_count(value: int, name: str, s: RetrievalSettings) -> int:
    limit = min(s.max_match_count, SQL_MAX_MATCH_COUNT)
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= limit:
        raise InputError(f"{name} must be between 1 and {limit}, got {value!r}")
    return int(value)


def _check_threshold(value: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"similarity_threshold must be a number between -1 and 1, got {value!r}") from None
    if not -1.0 <= number <= 1.0:  # also rejects NaN
        raise InputError(f"similarity_threshold must be between -1 and 1, got {value!r}")
    return number


def _query_text(text: Any, s: RetrievalSettings, name: str = "query text") -> str:
    if text is None:
        return ""
    if not isinstance(text, str):
        raise InputError(f"{name} must be a string, got {type(text).__name__}")
    check_query_length(text, s.max_query_chars, name)
    return text


def _weights(weights: Mapping[str, float] | None) -> str:
    import json

    if weights is None:
        return '{"vector": 1, "lexical": 1}'
    if not isinstance(weights, Mapping):
        raise InputError('weights must be a mapping like {"vector": 1, "lexical": 1}')
    out: dict[str, float] = {}
    for key, value in weights.items():
        if key not in ("vector", "lexical"):
            raise InputError(f"unknown weight {key!r} (known: vector, lexical)")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(f"weight {key} must be a number, got {value!r}") from None
        if not math.isfinite(number) or number < 0:
            raise InputError(f"weight {key} must be a finite number >= 0, got {value!r}")
        out[key] = number
    return json.dumps(out)


def _first(row: Any) -> Any:
    if isinstance(row, Mapping):
        return next(iter(row.values()))
    return row[0]


def _check_vaults(conn: Connection, names: Sequence[str]) -> None:
    if names:
        with database_call(conn):
            resolve_vault_names(conn, names)


def _filter(filter: Mapping[str, Any] | None) -> str:
    # Vault names are checked by the SQL functions themselves (SQLSTATE 42704 → NotFoundError):
    # checking here too cost every search a round trip.
    return filter_json(filter)


# -- filters ------------------------------------------------------------------------------------

def compile_filter(conn: Connection, filter: Mapping[str, Any] | None) -> CompiledFilter:
    """How the database reads a filter; raises InputError for an invalid one."""
    query = sql.SQL("select containment, predicate::text as predicate, vars, vaults"
                    " from ragpg_compile_filter(%(f)s::jsonb)")
    return fetch_rows(conn, CompiledFilter, query, {"f": filter_json(filter)})[0]


# -- match functions ----------------------------------------------------------------------------

def _nearest(conn: Connection, model: EmbeddingModelRef, function: str, query_embedding: Any, match_count: int,
             similarity_threshold: float, filter: Mapping[str, Any] | None, s: RetrievalSettings,
             index_args: Mapping[str, int] | None = None) -> list[VectorMatch]:
    """A per-model nearest-chunks function; `index_args` are its HNSW and exact-scan arguments."""
    params: dict[str, Any] = {"q": vector_param(conn, model, query_embedding),
                              "t": _check_threshold(similarity_threshold),
                              "n": _check_count(match_count, "match_count", s), "f": _filter(filter),
                              **(index_args or {})}
    args = sql.SQL("").join(sql.SQL(", {} => %({})s::integer").format(sql.Identifier(k), sql.SQL(k))
                            for k in index_args or {})
    query = sql.SQL(
        "select {cols}, similarity from {fn}(query_embedding => %(q)s::vector,"
        " similarity_threshold => %(t)s::float8, match_count => %(n)s::integer, filter => %(f)s::jsonb{args})"
    ).format(cols=sql.SQL(_CHUNK_COLUMNS), fn=sql.Identifier(function), args=args)
    return fetch_rows(conn, VectorMatch, query, params)


def match_vector(conn: Connection, model: EmbeddingModelRef, query_embedding: Any, *,
                 match_count: int = 10, similarity_threshold: float = 0.0,
                 filter: Mapping[str, Any] | None = None, settings: RetrievalSettings | None = None,
                 exact_scan_max_rows: int | None = None, ef_search: int | None = None) -> list[VectorMatch]:
    """``match_native_chunks_<model>``: nearest chunks by cosine similarity, best first."""
    s = _settings(settings)
    return _nearest(conn, model, model.match_function, query_embedding, match_count, similarity_threshold, filter, s,
                    {"exact_scan_max_rows": _or(exact_scan_max_rows, s.exact_scan_max_rows),
                     "ef_search": _or(ef_search, s.hnsw_ef_search)})


def match_langchain(conn: Connection, model: EmbeddingModelRef, query_embedding: Any, *,
                    match_count: int = 10, similarity_threshold: float = 0.0,
                    filter: Mapping[str, Any] | None = None,
                    settings: RetrievalSettings | None = None) -> list[VectorMatch]:
    """``match_langchain_chunks_<model>``: the same search over LangChain PGVector tables.

    ``vault`` is the collection name; a ``vault`` filter is not checked against ragpg's vaults.
    """
    return _nearest(conn, model, model.langchain_function, query_embedding, match_count, similarity_threshold, filter,
                    _settings(settings))


def match_lexical(conn: Connection, query_text: str, *, match_count: int = 10,
                  filter: Mapping[str, Any] | None = None, settings: RetrievalSettings | None = None,
                  k1: float | None = None, b: float | None = None) -> list[LexicalMatch]:
    """``match_lexical_chunks``: BM25 over each vault's text search configuration, best first.

    Empty (or blank) text raises InputError; text without a searchable word (stopwords only,
    punctuation only) gives an empty list.
    """
    s = _settings(settings)
    text = _query_text(query_text, s)
    if not text.strip():
        raise InputError("query text is empty")
    params = {
        "q": text,
        "n": _check_count(match_count, "match_count", s),
        "f": _filter(filter),
        "k1": s.bm25_k1 if k1 is None else k1,
        "b": s.bm25_b if b is None else b,
    }
    query = sql.SQL(
        "select {cols}, bm25_score from match_lexical_chunks(query_text => %(q)s::text,"
        " match_count => %(n)s::integer, filter => %(f)s::jsonb, k1 => %(k1)s::float8, b => %(b)s::float8)"
    ).format(cols=sql.SQL(_CHUNK_COLUMNS))
    return fetch_rows(conn, LexicalMatch, query, params)


class FusionOptions(TypedDict, total=False):
    """The tunables of a hybrid search; a missing or None one takes its default: `RetrievalSettings`,
    max(60, match_count) for candidate_count, 10 for match_count, 0 for similarity_threshold."""

    match_count: int
    filter: Mapping[str, Any] | None
    similarity_threshold: float
    rrf_k: int | None
    weights: Mapping[str, float] | None
    candidate_count: int | None
    settings: RetrievalSettings | None
    k1: float | None
    b: float | None
    exact_scan_max_rows: int | None
    ef_search: int | None


def _fusion_params(options: FusionOptions) -> dict[str, Any]:
    s = _settings(options.get("settings"))
    n = _check_count(_or(options.get("match_count"), 10), "match_count", s)
    return {
        "n": n,
        "f": _filter(options.get("filter")),
        "t": _check_threshold(_or(options.get("similarity_threshold"), 0.0)),
        "rk": _or(options.get("rrf_k"), s.rrf_k),
        "w": _weights(options.get("weights")),
        "cc": _check_count(_or(options.get("candidate_count"), max(60, n)), "candidate_count", s),
        "k1": _or(options.get("k1"), s.bm25_k1),
        "b": _or(options.get("b"), s.bm25_b),
        "x": _or(options.get("exact_scan_max_rows"), s.exact_scan_max_rows),
        "ef": _or(options.get("ef_search"), s.hnsw_ef_search),
    }


def match_hybrid(conn: Connection, model: EmbeddingModelRef, query_text: str | None, query_embedding: Any,
                 **options: Unpack[FusionOptions]) -> list[HybridMatch]:
    """RRF of one query's vector and BM25 rankings: the one-query case of `match_hybrid_multi`
    (``match_hybrid_chunks_<model>`` in SQL is the same).

    Empty or stopword-only text is allowed: the lexical list is then empty and the result is the
    vector ranking."""
    return match_hybrid_multi(conn, model, [query_text], [query_embedding], **options)


def _hybrid_function(model: EmbeddingModelRef, queries: int) -> dict[str, sql.Composable]:
    """The model's hybrid function for one query (``match_hybrid_chunks_<model>``) or several, and how
    its queries are passed."""
    if queries == 1:
        return {"fn": sql.Identifier(model.hybrid_function),
                "queries": sql.SQL("query_text => %(qt)s::text, query_embedding => %(q)s::vector")}
    return {"fn": sql.Identifier(model.hybrid_multi_function),
            "queries": sql.SQL("query_texts => %(qt)s::text[], query_embeddings => %(q)s::text[]::vector[]")}


def match_hybrid_multi(conn: Connection, model: EmbeddingModelRef, query_texts: Sequence[str | None],
                       query_embeddings: Sequence[Any], **options: Unpack[FusionOptions]) -> list[HybridMatch]:
    """``match_hybrid_multi_chunks_<model>``: RRF over 2·n lists (n texts, n embeddings), one round trip.

    A None embedding (or empty text) leaves that query's vector (or lexical) list out. Each list is
    candidate_count long."""
    s = _settings(options.get("settings"))
    texts, embeddings = list(query_texts), list(query_embeddings)
    if not 1 <= len(embeddings) <= MAX_MULTI_QUERIES:
        raise InputError(f"query_embeddings must hold between 1 and {MAX_MULTI_QUERIES} embeddings, "
                         f"got {len(embeddings)}")
    if len(texts) != len(embeddings):
        raise InputError(f"query_texts and query_embeddings must have the same length, "
                         f"got {len(texts)} and {len(embeddings)}")
    params = _fusion_params(options)
    params["qt"] = [_query_text(t, s, "query text" if len(texts) == 1 else f"query text {i + 1}")
                    for i, t in enumerate(texts)]
    if len(texts) == 1:  # match_hybrid_chunks_<model>, the same with one query: values, not arrays, to send
        params["qt"] = params["qt"][0]
        params["q"] = None if embeddings[0] is None else vector_param(conn, model, embeddings[0])
    else:
        params["q"] = [None if e is None else vector_text(model, e) for e in embeddings]
    query = sql.SQL(
        "select {cols}, vector_rank, similarity, lexical_rank, bm25_score, rrf_score, vector_hits, lexical_hits"
        " from {fn}({queries}, match_count => %(n)s::integer, filter => %(f)s::jsonb,"
        " similarity_threshold => %(t)s::float8, rrf_k => %(rk)s::integer, weights => %(w)s::jsonb,"
        " candidate_count => %(cc)s::integer, k1 => %(k1)s::float8, b => %(b)s::float8,"
        " exact_scan_max_rows => %(x)s::integer, ef_search => %(ef)s::integer)"
    ).format(cols=sql.SQL(_CHUNK_COLUMNS), **_hybrid_function(model, len(texts)))
    return fetch_rows(conn, HybridMatch, query, params)


def match_folders(conn: Connection, model: EmbeddingModelRef, query_embedding: Any, *,
                  vaults: Sequence[str] | None = None, match_count: int = 50,
                  settings: RetrievalSettings | None = None) -> list[FolderMatch]:
    """``match_folders_<model>``: folders ranked by similarity of the query to their mean embedding."""
    s = _settings(settings)
    params: dict[str, Any] = {
        "q": vector_param(conn, model, query_embedding),
        "n": _check_count(match_count, "match_count", s),
        "v": None,
    }
    if vaults is not None:
        if isinstance(vaults, str):
            vaults = [vaults]
        names = list(vaults)
        _check_vaults(conn, names)
        with database_call(conn), conn.cursor() as cur:
            cur.execute("select id from vaults where name = any(%s)", (names,))
            params["v"] = [_first(r) for r in cur.fetchall()]
    query = sql.SQL(
        "select vault_id, vault, folder, chunk_count, similarity"
        " from {fn}(query_embedding => %(q)s::vector, vault_ids => %(v)s::bigint[], match_count => %(n)s::integer)"
    ).format(fn=sql.Identifier(model.folders_function))
    return fetch_rows(conn, FolderMatch, query, params)
