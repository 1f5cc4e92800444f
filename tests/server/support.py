"""Seed rows for server tests directly with SQL (documents and chunks without embeddings are enough
for chunk fetch, vault listing and auth; retrieval tests index real files through the pipeline)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from rag.store import keys as key_store

TABLES = ("vaults", "documents", "chunks", "api_keys", "index_runs")


@dataclass(frozen=True)
class Keys:
    admin: str  # all vaults, restricted clearance
    alpha_public: str  # vault alpha, public only
    alpha_restricted: str  # vault alpha, every level
    beta: str  # vault beta, internal
    revoked: str


def add_vault(conn: psycopg.Connection, name: str, root: str = "/nonexistent") -> int:
    row = conn.execute("insert into vaults (name, root_path) values (%s, %s) returning id", (name, root)).fetchone()
    conn.commit()
    return row["id"]


def add_document(conn: psycopg.Connection, vault_id: int, source_path: str, chunks: list[str], *,
                 confidentiality: str = "public", title: str | None = None) -> int:
    body = "\n\n".join(chunks)
    doc = conn.execute(
        "insert into documents (vault_id, source_path, folder, title, confidentiality, document_version,"
        " size_bytes, metadata) values (%s, %s, %s, %s, %s, %s, %s, %s) returning id",
        (vault_id, source_path, source_path.rpartition("/")[0], title or source_path, confidentiality,
         hashlib.sha256(body.encode()).hexdigest(), len(body.encode()),
         Jsonb({"confidentiality": confidentiality}))).fetchone()
    for i, text in enumerate(chunks):
        conn.execute(
            "insert into chunks (document_id, vault_id, ordinal, heading_path, content, token_count, start_line,"
            " end_line, metadata) values (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (doc["id"], vault_id, i, f"{title or source_path} > part {i}", text, len(text.split()), 1 + i * 3,
             3 + i * 3, Jsonb({"confidentiality": confidentiality, "vault": "x"})))
    conn.commit()
    return doc["id"]


def seed(conn: psycopg.Connection) -> None:
    alpha = add_vault(conn, "alpha")
    beta = add_vault(conn, "beta")
    add_document(conn, alpha, "notes/public.md", ["Public note about gardening.", "Second public chunk."])
    add_document(conn, alpha, "notes/internal.md", ["Internal roadmap details."], confidentiality="internal")
    add_document(conn, alpha, "secret/plan.md", ["RESTRICTED launch codes 1234."], confidentiality="restricted")
    add_document(conn, beta, "b.md", ["Beta vault public text."])
    add_document(conn, beta, "b-internal.md", ["Beta internal text."], confidentiality="internal")


def make_keys(conn: psycopg.Connection) -> Keys:
    def create(name: str, **kw) -> str:
        return key_store.create_key(conn, name, **kw)[1]

    keys = Keys(
        admin=create("admin", vaults=[], all_vaults=True, clearance="restricted"),
        alpha_public=create("alpha-public", vaults=["alpha"], clearance="public"),
        alpha_restricted=create("alpha-restricted", vaults=["alpha"], clearance="restricted"),
        beta=create("beta-internal", vaults=["beta"], clearance="internal"),
        revoked=create("old", vaults=["alpha"], clearance="restricted"),
    )
    key_store.revoke_key(conn, "old")
    return keys


def row_counts(conn: psycopg.Connection) -> dict[str, int]:
    counts = {t: conn.execute(f"select count(*) as n from {t}").fetchone()["n"] for t in TABLES}
    conn.commit()
    return counts


def assert_pool_idle(pool, timeout: float = 10.0) -> dict[str, int]:
    """No connection checked out and nobody waiting. `pool_size` also counts a connection still being
    opened by a pool growing in the background, so wait for that to settle first."""
    import time

    deadline = time.monotonic() + timeout
    while (stats := pool.get_stats()).get("pool_size", 0) != stats.get("pool_available", 0):
        assert time.monotonic() < deadline, f"connections still checked out: {stats}"
        time.sleep(0.05)
    assert stats.get("requests_waiting", 0) == 0, stats
    return stats


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
