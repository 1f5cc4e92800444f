"""How close a question comes to each candidate note as a whole: its outline and the words other notes
link to it with (the note vectors of rag.ingest.note_vectors).

For each candidate note, signal = Σ over its vectors of weight · max(0, cosine similarity − floor)
(the outline weighs 1, the inbound sentences `note_inbound_weight`): a note
whose name and headings, or whose inbound link sentences, say what the question asks gets credit a
single passage may not carry. Signals are divided by the best among the candidates (0..1), and the
ranking adds `w_note · best score · signal` to each of the note's passages (rag.retrieval.rank). Read
on the caller's connection, so row-level security hides the vectors of notes it may not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from psycopg.rows import class_row

from rag.store.database import Connection
from rag.types import Candidate

NoteKey = tuple[str, str]  # (vault, source_path)

_SIGNALS = """
select v.name as vault, d.source_path,
       sum(case nv.field when 'inbound' then %(inbound_weight)s else 1 end
           * greatest(0, 1 - (nv.embedding <=> %(query)s::vector) - %(floor)s))::float8 as signal
from note_vectors nv
join documents d on d.id = nv.document_id
join vaults v on v.id = d.vault_id
join unnest(%(vaults)s::text[], %(paths)s::text[]) as c(vault, source_path)
  on c.vault = v.name and c.source_path = d.source_path
where nv.model_id = %(model)s
group by v.name, d.source_path
"""


@dataclass(frozen=True)
class _Signal:
    vault: str
    source_path: str
    signal: float


def note_signals(conn: Connection, model_id: int, query_embedding: np.ndarray, candidates: Sequence[Candidate],
                 *, floor: float, inbound_weight: float) -> dict[NoteKey, float]:
    """(vault, source_path) → the note's signal relative to the best candidate note's (0..1]; notes with
    none are left out."""
    keys = list(dict.fromkeys((c.vault, c.source_path) for c in candidates))
    if not keys:
        return {}
    params = {"query": np.asarray(query_embedding, dtype=np.float32), "floor": floor, "model": model_id,
              "inbound_weight": inbound_weight,
              "vaults": [k[0] for k in keys], "paths": [k[1] for k in keys]}
    with conn.cursor(row_factory=class_row(_Signal)) as cur:
        rows = [r for r in cur.execute(_SIGNALS, params).fetchall() if r.signal > 0]
    best = max((r.signal for r in rows), default=0.0)
    return {(r.vault, r.source_path): r.signal / best for r in rows} if best > 0 else {}
