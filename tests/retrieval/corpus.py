"""Test corpus builders: vaults, documents, chunks and embeddings inserted directly with SQL."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from rag.store import models
from tests.retrieval.filter_cases import FILTER_CORPUS

FILTER_DIMS = 16


def hash_embedding(text: str, dims: int) -> np.ndarray:
    """A deterministic, L2-normalised bag-of-words vector (similar texts share words, so dimensions)."""
    vector = np.zeros(dims, dtype=np.float64)
    for token in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(token.encode()).digest()
        index = int.from_bytes(digest[:4], "little") % dims
        vector[index] += 1.0 if digest[4] % 2 == 0 else -1.0
    if not vector.any():
        vector[0] = 1.0
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def vector_text(vector: Sequence[float] | np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


def add_vault(conn: psycopg.Connection, name: str, *, config: str = "english", own_partition: bool = False) -> int:
    """`own_partition`: the vault gets partitions of its own at once (as an index run gives a vault past
    ingest.own_partition_min_chunks); otherwise it starts in the shared ones, as every new vault does."""
    row = conn.execute("insert into vaults (name, root_path, text_search_config) values (%s, %s, %s::regconfig)"
                       " returning id", (name, f"/vaults/{name}", config)).fetchone()
    if own_partition:
        conn.execute("select ragpg_place_vault(%s, 1, 0)", (row["id"],))
    return row["id"]


def add_document(conn: psycopg.Connection, vault_id: int, source_path: str, *, folder: str | None = None,
                 title: str | None = None, metadata: dict[str, Any] | None = None) -> int:
    if folder is None:
        folder = source_path.rpartition("/")[0]
    row = conn.execute(
        "insert into documents (vault_id, source_path, folder, title, document_version, size_bytes, metadata)"
        " values (%s, %s, %s, %s, 'v1', 1, %s) returning id",
        (vault_id, source_path, folder, title, Jsonb(metadata or {}))).fetchone()
    return row["id"]


def add_chunks(conn: psycopg.Connection, document_id: int, contents: Iterable[str], *,
               metadata: dict[str, Any] | None = None, heading_path: str = "", start_ordinal: int = 0) -> list[int]:
    """Insert chunks of one document in one statement; chunk metadata = the document's + the vault name etc."""
    doc = conn.execute(
        "select d.vault_id, d.source_path, d.folder, v.name as vault, v.text_search_config::text as config"
        " from documents d join vaults v on v.id = d.vault_id where d.id = %s", (document_id,)).fetchone()
    base = {"vault": doc["vault"], "folder": doc["folder"], "source_path": doc["source_path"], **(metadata or {})}
    rows = [(document_id, doc["vault_id"], start_ordinal + i, heading_path, text, Jsonb(base), doc["config"])
            for i, text in enumerate(contents)]
    ids = []
    with conn.cursor() as cur:
        for row in rows:
            cur.execute("insert into chunks (document_id, vault_id, ordinal, heading_path, content, metadata,"
                        " text_search_config) values (%s, %s, %s, %s, %s, %s, %s::regconfig) returning id", row)
            ids.append(cur.fetchone()["id"])
    return ids


def add_embeddings(conn: psycopg.Connection, model: models.EmbeddingModelRef,
                   items: Iterable[tuple[int, Sequence[float] | np.ndarray]]) -> None:
    """Insert (chunk id, vector) pairs into the model's embedding table in one statement."""
    pairs = list(items)
    query = sql.SQL("insert into {} (vault_id, chunk_id, embedding)"
                    " select c.vault_id, u.id, u.v from unnest(%s::bigint[], %s::text[]::vector[]) u (id, v)"
                    " join chunks c on c.id = u.id").format(
        sql.Identifier(model.embedding_table))
    conn.execute(query, ([chunk_id for chunk_id, _ in pairs], [vector_text(v) for _, v in pairs]))


def embed_chunks(conn: psycopg.Connection, model: models.EmbeddingModelRef, chunk_ids: Sequence[int]) -> None:
    """Hash-embed the given chunks' content (heading path + content) into the model's table."""
    rows = conn.execute("select id, heading_path, content from chunks where id = any(%s)", (list(chunk_ids),))
    add_embeddings(conn, model, [(r["id"], hash_embedding(f"{r['heading_path']} {r['content']}", model.dims))
                                 for r in rows.fetchall()])


def build_filter_corpus(conn: psycopg.Connection) -> tuple[models.EmbeddingModelRef, dict[str, int]]:
    """The FILTER_CORPUS vaults, one document + chunk per entry, hash embeddings; returns (model, key -> chunk id)."""
    model = models.register_model(conn, "hash", "filter-test", FILTER_DIMS)
    vaults: dict[str, int] = {}
    keys: dict[str, int] = {}
    for entry in FILTER_CORPUS:
        vault_id = vaults.get(entry["vault"]) or add_vault(conn, entry["vault"])
        vaults[entry["vault"]] = vault_id
        path = f"{entry['folder']}/{entry['file']}" if entry["folder"] else entry["file"]
        doc = add_document(conn, vault_id, path, folder=entry["folder"], title=entry["metadata"].get("title"),
                           metadata=entry["metadata"])
        [chunk_id] = add_chunks(conn, doc, [entry["content"]], metadata=entry["metadata"])
        keys[entry["key"]] = chunk_id
    embed_chunks(conn, model, list(keys.values()))
    return model, keys


def random_unit_vectors(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    matrix = rng.standard_normal((n, dims)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))
