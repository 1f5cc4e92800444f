"""Small vaults on disk and snapshots of what the index holds, for comparing runs."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from rag.config import Settings
from rag.ingest.pipeline import IndexReport, index_vaults
from rag.store.vaults import NewVault, Vault, add_vault
from tests.support.cli import ragpg_env, subprocess_env
from tests.support.files import write_files

RAGPG = [sys.executable, "-m", "ragpg_cli.main"]


def add(conn: psycopg.Connection, name: str, path: Path, **kwargs: Any) -> Vault:
    return add_vault(conn, NewVault(name=name, path=path, **kwargs))


def index(settings: Settings, *names: str) -> IndexReport:
    return index_vaults(settings, list(names) or None)


def with_settings(settings: Settings, **groups: dict[str, Any]) -> Settings:
    """A copy with some fields of nested groups changed, e.g. ingest={"upsert_batch_documents": 1}."""
    updates = {name: getattr(settings, name).model_copy(update=fields) for name, fields in groups.items()}
    return settings.model_copy(update=updates)


def snapshot(conn: psycopg.Connection, vault: str) -> dict[str, Any]:
    """Everything an index run decides, independent of generated ids and timestamps."""
    docs = conn.execute(
        "select d.source_path, d.folder, d.title, d.document_version, d.size_bytes, d.tags, d.metadata "
        "from documents d join vaults v on v.id = d.vault_id where v.name = %s order by 1", (vault,)).fetchall()
    chunks = conn.execute(
        "select d.source_path, c.ordinal, c.heading_path, c.content, c.start_byte, c.end_byte, c.metadata "
        "from chunks c join documents d on d.id = c.document_id join vaults v on v.id = c.vault_id "
        "where v.name = %s order by 1, 2", (vault,)).fetchall()
    stats = conn.execute(  # (kept per confidentiality level: one figure per level and lexeme)
        "select (select array_agg(array[s.level, s.chunk_count, s.total_length] order by s.level) "
        "        from bm25_vault_stats s where s.vault_id = v.id) as levels, "
        "(select count(*) from bm25_term_stats t where t.vault_id = v.id) as terms, "
        "(select sum(chunk_frequency) from bm25_term_stats t where t.vault_id = v.id) as postings "
        "from vaults v where v.name = %s", (vault,)).fetchone()
    return {"documents": [dict(r) for r in docs], "chunks": [dict(r) for r in chunks], "stats": dict(stats or {})}


def embedding_count(conn: psycopg.Connection, table: str, vault: str) -> int:
    from psycopg import sql

    row = conn.execute(sql.SQL(
        "select count(*) as n from {} e join chunks c on c.id = e.chunk_id join vaults v on v.id = c.vault_id "
        "where v.name = %s").format(sql.Identifier(table)), (vault,)).fetchone()
    return int(row["n"])


def text_columns(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """(table, column) of every column of the schema that can hold text: text, varchar, name, arrays,
    json, jsonb, tsvector (every table, the per-vault BM25 index tables included)."""
    rows = conn.execute(
        "select c.table_name, c.column_name from information_schema.columns c "
        "join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name "
        "where c.table_schema = 'public' and t.table_type = 'BASE TABLE' "
        "and c.data_type in ('text', 'character varying', 'name', 'ARRAY', 'json', 'jsonb', 'tsvector', "
        "'USER-DEFINED') and c.udt_name <> 'vector' order by 1, 2").fetchall()
    return [(r["table_name"], r["column_name"]) for r in rows]


def tables_holding(conn: psycopg.Connection, needles: list[str]) -> list[str]:
    """`table.column` of every text column where one of `needles` occurs (case-insensitive), as the owner."""
    from psycopg import sql

    patterns = [f"%{n.lower()}%" for n in needles]
    found = []
    for table, column in text_columns(conn):
        query = sql.SQL("select count(*) as n from {} where lower({}::text) like any(%s)").format(
            sql.Identifier(table), sql.Identifier(column))
        if conn.execute(query, (patterns,)).fetchone()["n"]:
            found.append(f"{table}.{column}")
    if not conn.autocommit:
        conn.commit()
    return found


def cli_env(db_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return subprocess_env(ragpg_env(db_url, tmp_path, **extra))




# --- reading files as a user whom permissions apply to -----------------------------------------

_CAP_VERSION_3 = 0x20080522
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _capset(update: Callable[[int], int]) -> int:
    """Change this thread's effective capability set; returns the previous one."""
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    previous = data[0].effective
    data[0].effective = update(previous)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    return previous


@contextmanager
def file_permissions_enforced() -> Iterator[None]:
    """Root reads anything (CAP_DAC_OVERRIDE); drop that from THIS thread so chmod 000 really blocks.

    Only the effective set changes (the permitted set keeps the bits), so it is restored afterwards.
    Database connections must be opened before: the server's socket folder is not root's.
    """
    if os.geteuid() != 0:
        yield
        return
    mask = (1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)
    previous = _capset(lambda eff: eff & ~mask)
    try:
        yield
    finally:
        _capset(lambda eff: previous)


def indexed_filtered_terms(conn: psycopg.Connection, query: str, vaults: list[str] | None = None) -> dict[str, Any]:
    """The term arrays ragpg_lexical_scores hands to ragpg_lexical_scores_indexed_filtered for `query`
    over `vaults` (None: every vault), read as the owner (statistics, not text): v vault ids, c text
    search configs, l lexemes, w qtf * idf, a the vault's average chunk length."""
    row = conn.execute("""
        select array_agg(s.vault_id) as v, array_agg(q.text_search_config) as c, array_agg(q.lexeme) as l,
               array_agg(q.query_frequency * ln(1 + (s.chunk_count - ts.chunk_frequency + 0.5::float8)
                                                / (ts.chunk_frequency + 0.5::float8))) as w,
               array_agg(s.total_length::float8 / s.chunk_count) as a
        from (select vault_id, sum(chunk_count)::bigint as chunk_count, sum(total_length)::bigint as total_length
              from bm25_vault_stats group by vault_id) s
        join vaults v on v.id = s.vault_id and (%(vaults)s::text[] is null or v.name = any(%(vaults)s))
        cross join ragpg_query_lexemes(%(query)s, %(vaults)s) q
        cross join lateral (select sum(tt.chunk_frequency)::bigint as chunk_frequency from bm25_term_stats tt
                            where tt.vault_id = s.vault_id and tt.lexeme = q.lexeme having count(*) > 0) ts""",
                       {"query": query, "vaults": vaults}).fetchone()
    assert row is not None
    return dict(row)


def hnsw_definition(table: str) -> str:
    """pg_get_indexdef of a model's HNSW index as ragpg_create_hnsw_index builds it (on the table
    partitioned by vault: ON ONLY the parent, one graph per vault beneath it)."""
    return (f"CREATE INDEX {table}_hnsw_idx ON ONLY public.{table} USING hnsw (embedding vector_cosine_ops)"
            " WITH (m='16', ef_construction='128')")


def indexed_vault(cli: Callable[..., tuple[int, str, str]], root: Path, files: dict[str, str],
                  name: str = "notes") -> Path:
    """`files` written under `root`, added as vault `name` and indexed through the CLI."""
    write_files(root, files)
    assert cli("vault", "add", name, str(root))[0] == 0
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    return root
