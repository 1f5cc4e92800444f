"""How common the query's words are in the searched vaults, and which of the given chunks hold them
(`ragpg_query_term_stats`, db/sql/50_lexical.sql): Postgres analyses the question and the chunks
alike, so no Python stemming has to guess at its lexemes.

A question whose rarest words the notes never use is one they likely cannot answer; the notes
abstention reads these figures (`rag.notes.signals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from psycopg import sql

from rag.store.calls import fetch_rows
from rag.store.database import Connection


@dataclass(frozen=True)
class TermStat:
    lexeme: str
    chunk_frequency: int  # chunks of the vaults holding the lexeme
    chunk_count: int  # chunks of the vaults
    in_chunks: list[int] = field(default_factory=list)  # the given chunks holding the lexeme


def query_term_stats(conn: Connection, query_text: str, vaults: Sequence[str] | None,
                     readable_levels: Sequence[str] | None = None,
                     chunk_ids: Sequence[int] = ()) -> list[TermStat]:
    """Per query lexeme: chunks holding it, chunks in all, and which of `chunk_ids` hold it. With
    `readable_levels` (a caller below the top clearance) only chunks of those confidentiality levels
    count, so the figures reveal nothing about notes the caller may not read."""
    query = sql.SQL("select lexeme, chunk_frequency, chunk_count, in_chunks"
                    " from ragpg_query_term_stats(%(q)s::text, %(v)s::text[], %(l)s::text[], %(c)s::bigint[])")
    return fetch_rows(conn, TermStat, query, {"q": query_text, "v": list(vaults) if vaults else None,
                                              "l": list(readable_levels) if readable_levels is not None else None,
                                              "c": list(chunk_ids)})
