"""Which BM25 backend a vault's lexical leg runs on: the SQL BM25 (bm25_postings, always there) or a
pg_textsearch `bm25` index (db/sql/55_bm25_index.sql), chosen per vault at index time by the setting
`retrieval.lexical_backend`:

* `auto` (default): the index when the server has pg_textsearch loaded (the embedded server does when
  `ragpg[bm25]` is installed), the SQL BM25 otherwise;
* `sql`: never an index (a vault's existing one is dropped);
* `pg_textsearch`: the index, and an index run fails with a one-line error when the server cannot.

Each search then takes the index only when every vault it covers has one built with the same k1 and b
(`ragpg_lexical_backend`); with a metadata filter, only when the filter keeps enough chunks for the index
read deeper to prove the answer (db/sql/56_bm25_filtered.sql). The scores are the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

from rag.errors import ConfigError
from rag.store.calls import database_call, fetch_rows
from rag.store.database import Connection

LexicalBackendSetting = Literal["auto", "sql", "pg_textsearch"]
SQL_BACKEND = "sql"
INDEX_BACKEND = "pg_textsearch"


@dataclass(frozen=True)
class VaultLexicalBackend:
    vault: str
    backend: str
    reason: str
    k1: float | None
    b: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.vault, "backend": self.backend, "reason": self.reason, "k1": self.k1, "b": self.b}


def vault_backends(conn: Connection) -> list[VaultLexicalBackend]:
    """Every vault's lexical backend and why (for `ragpg db status`)."""
    return fetch_rows(conn, VaultLexicalBackend,
                      sql.SQL("select vault, backend, reason, k1, b from ragpg_lexical_backends()"), {})


def choose_for_vault(conn: Connection, vault: str, setting: LexicalBackendSetting, k1: float, b: float) -> str:
    """Build, keep or drop `vault`'s bm25 index as `setting` says; the backend it has afterwards."""
    with database_call(conn):
        if setting == SQL_BACKEND:
            conn.execute("select ragpg_disable_bm25_index(%s)", (vault,))
            return SQL_BACKEND
        row = conn.execute("select ragpg_enable_bm25_index(%s, %s, %s) as backend", (vault, k1, b)).fetchone()
    backend = str(row["backend"]) if row is not None else SQL_BACKEND
    if setting == INDEX_BACKEND and backend != INDEX_BACKEND:
        raise ConfigError("retrieval.lexical_backend is pg_textsearch, but this server has not loaded it "
                          "(install ragpg[bm25] for the embedded server, or add pg_textsearch to "
                          "shared_preload_libraries); set it to auto to use the SQL BM25")
    return backend


def backend_for_search(conn: Connection, vaults: Sequence[str] | None, filter_json: str,
                       k1: float, b: float, candidate_count: int = 60, query: str | None = None) -> str:
    """The backend a lexical search for `query` over `vaults` (None = all) with the filter (as JSON text,
    `rag.retrieval.filters.filter_json`: one encoding for every call) for `candidate_count` chunks takes
    (the SQL rule; a filtered search the index cannot prove still ends on the SQL BM25)."""
    with database_call(conn):
        row = conn.execute("select ragpg_lexical_backend(%s, %s::jsonb, %s, %s, %s, %s) as backend",
                           (list(vaults) if vaults is not None else None, filter_json, k1, b,
                            candidate_count, query)).fetchone()
    return str(row["backend"]) if row is not None else SQL_BACKEND
