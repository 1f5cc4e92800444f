"""How common the query's words are in the searched vaults (`ragpg_query_term_stats`, db/sql/50_lexical.sql).

A question whose rarest words the notes never use is one they likely cannot answer; the notes
abstention reads these figures (`rag.notes.abstain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from rag.retrieve import fetch_rows


@dataclass(frozen=True)
class TermStat:
    lexeme: str
    chunk_frequency: int  # chunks of the vaults holding the lexeme
    chunk_count: int  # chunks of the vaults


def query_term_stats(conn: psycopg.Connection, query_text: str, vaults: Sequence[str] | None) -> list[TermStat]:
    query = sql.SQL("select lexeme, chunk_frequency, chunk_count"
                    " from ragpg_query_term_stats(%(q)s::text, %(v)s::text[])")
    return fetch_rows(conn, TermStat, query, {"q": query_text, "v": list(vaults) if vaults else None})
