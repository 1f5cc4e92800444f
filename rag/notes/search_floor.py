"""The floor under `search`: a query that shares no word and no meaning with the notes finds nothing.

Without it a search always lists its best candidates, however unrelated (six notes for
`qwertyuiop zxcvbnm asdfghjkl`). No word: none of the query's lexemes occurs in a chunk the caller
may read in the searched vaults (Postgres analyses query and chunks alike). No meaning: the closest
passage's cosine similarity is below `notes.search_floor_similarity`. Both must hold, so a question in
the notes' own words is never cut, and one in other words still passes on its meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.access import Scope
from rag.retrieval.terms import query_term_stats
from rag.store.database import Connection
from rag.types import RankedChunk


def below_search_floor(conn: Connection, query: str, vaults: Sequence[str], caller: Scope,
                       ranked: Sequence[RankedChunk], min_similarity: float) -> bool:
    """True when the query shares no word with the readable notes of `vaults` and no ranked passage
    comes as close as `min_similarity` in meaning."""
    similarities = [r.candidate.similarity for r in ranked if r.candidate.similarity is not None]
    if similarities and max(similarities) >= min_similarity:
        return False
    stats = query_term_stats(conn, query, vaults, caller.readable_levels())
    return not any(s.chunk_frequency > 0 for s in stats)
