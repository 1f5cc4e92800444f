"""Test helpers for the notes workflow: small vaults written straight into the database.

`NotesDB` registers the hash embedding model and inserts vaults, documents, chunks and their
embeddings the way the indexing pipeline stores them (chunk metadata carries vault, folder,
source_path and confidentiality, so the SQL filters need no join). An embedding can be given
exactly — `toward(query, similarity)` builds a unit vector with a chosen cosine similarity to a
question's embedding, `toward_both` one with a chosen similarity to one vector that leans to
another — so rankings are tested against hand-computed numbers.

`ABSTAIN` is the abstention model the tests use: the defaults in `rag.notes.settings` are refitted
on the golden set, and no test may depend on their numbers.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from rag.embed.base import Embedder
from rag.store import models
from rag.tokens import count_tokens


def toward(query: np.ndarray, similarity: float, seed: int = 0) -> np.ndarray:
    """A unit vector whose cosine similarity to `query` is exactly `similarity`."""
    q = np.asarray(query, dtype=np.float64)
    q = q / np.linalg.norm(q)
    noise = np.random.default_rng(seed).standard_normal(q.shape[0])
    noise -= noise.dot(q) * q
    noise /= np.linalg.norm(noise)
    return (similarity * q + np.sqrt(max(0.0, 1 - similarity**2)) * noise).astype(np.float32)


def toward_both(first: np.ndarray, second: np.ndarray, similarity: float) -> np.ndarray:
    """A unit vector in the plane of `first` and `second` with cosine `similarity` to `first`,
    turned towards `second` (its similarity to `second` follows from the angle between the two)."""
    a = np.asarray(first, dtype=np.float64)
    a = a / np.linalg.norm(a)
    b = np.asarray(second, dtype=np.float64)
    b = b - b.dot(a) * a
    b = b / np.linalg.norm(b)
    return (similarity * a + np.sqrt(max(0.0, 1 - similarity**2)) * b).astype(np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a.dot(b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# p(answerable) = logistic(bias + sum weight * signal): words the notes never use weigh most.
ABSTAIN: dict[str, Any] = {
    "abstain_weights": {"top_final": 1.0, "margin": 1.0, "top_similarity": 1.0, "sentence_similarity": 1.0,
                        "term_coverage": 4.0, "unknown_share": -4.0, "leg_agreement": 1.0},
    "abstain_bias": -3.0, "abstain_threshold": 0.5, "abstain_low_confidence": 0.5,
}


@dataclass
class NotesDB:
    conn: psycopg.Connection
    embedder: Embedder
    model: models.EmbeddingModelRef = field(init=False)
    vault_ids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.model = models.register_model(self.conn, self.embedder.provider, self.embedder.model,
                                             self.embedder.dims)
        self.conn.commit()

    def vault(self, name: str, root: str = "/notes") -> int:
        if name not in self.vault_ids:
            row = self.conn.execute("insert into vaults (name, root_path) values (%s, %s) returning id",
                                    (name, f"{root}/{name}")).fetchone()
            self.vault_ids[name] = row["id"]
            self.conn.commit()
        return self.vault_ids[name]

    def note(self, vault: str, source_path: str, sections: Sequence[tuple[str, str]], *,
             embeddings: Sequence[np.ndarray | None] | None = None, confidentiality: str = "public",
             embed: bool = True) -> list[int]:
        """Insert one document with one chunk per (heading_path, text); returns the chunk ids.

        `embed=False` stores no embeddings (as if indexed with another model)."""
        vault_id = self.vault(vault)
        folder = posixpath.dirname(source_path)
        raw = "\n\n".join(t for _, t in sections).encode()
        meta = {"vault": vault, "folder": folder, "source_path": source_path, "confidentiality": confidentiality}
        doc = self.conn.execute(
            "insert into documents (vault_id, source_path, folder, title, confidentiality, document_version,"
            " size_bytes, metadata) values (%s, %s, %s, %s, %s, %s, %s, %s) returning id",
            (vault_id, source_path, folder, posixpath.basename(source_path), confidentiality,
             hashlib.sha256(raw).hexdigest(), len(raw), Jsonb(meta))).fetchone()["id"]
        ids = []
        line = 1
        texts = [t for _, t in sections]
        computed = self.embedder.embed_documents(texts)
        for i, (heading, text) in enumerate(sections):
            n_lines = text.count("\n") + 1
            chunk_meta = {**meta, "heading_path": heading, "ordinal": i}
            cid = self.conn.execute(
                "insert into chunks (document_id, vault_id, ordinal, heading_path, content, token_count,"
                " start_line, end_line, metadata) values (%s, %s, %s, %s, %s, %s, %s, %s, %s) returning id",
                (doc, vault_id, i, heading, text, count_tokens(text), line, line + n_lines - 1,
                 Jsonb(chunk_meta))).fetchone()["id"]
            line += n_lines + 1
            ids.append(cid)
            if not embed:
                continue
            given = embeddings[i] if embeddings is not None and i < len(embeddings) else None
            vector = computed[i] if given is None else np.asarray(given, dtype=np.float32)
            self.conn.execute(f'insert into "{self.model.embedding_table}" (vault_id, chunk_id, embedding)'
                              ' values (%s, %s, %s)', (vault_id, cid, vector))
        self.conn.commit()
        return ids

    def query_vector(self, question: str) -> np.ndarray:
        return self.embedder.embed_query(question)


def chunk_ids(response: Any) -> list[Any]:
    return [(r.source_path, r.ordinal) for r in response.references]
