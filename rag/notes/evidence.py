"""The evidence stage of notes `ask` (and the ranking `search` shares): scope, retrieve, rank, and the
evidence vault's term statistics, handed on as one typed `Evidence`.

Retrieval and ranking are the shared stages (`rag.retrieval.stage`, `rag.retrieval.rank`); the scope
(vaults, folders, clearance, the folder prior) is `rag.notes.scope`'s. The evidence is judged within
its own vault (the vault of the best passage, `rag.notes.decision`): only that vault's term
statistics are read, so an unrelated vault changes no decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag.access import Scope
from rag.config import NotesSettings
from rag.notes.ask_trace import ScopeTrace
from rag.notes.scope import NotesScope, prepare_scope
from rag.retrieval.note_signal import note_signals
from rag.retrieval.rank import rank_candidates
from rag.retrieval.stage import Retrieval, retrieve_stage
from rag.retrieval.terms import TermStat, query_term_stats
from rag.runtime import Runtime
from rag.store.database import Connection
from rag.types import Decision, RankedChunk


@dataclass(frozen=True)
class Evidence:
    """What the question found: ranked passages and the evidence vault's term statistics."""

    scope: ScopeTrace
    retrieval: Decision
    ranked: list[RankedChunk]
    stats: list[TermStat]
    query_embedding: np.ndarray | None
    timings_ms: dict[str, float]


def evidence_vault(ranked: Sequence[RankedChunk]) -> str | None:
    """The vault the evidence is judged in: the best passage's."""
    return ranked[0].candidate.vault if ranked else None


def in_vault(ranked: Sequence[RankedChunk], vault: str | None) -> list[RankedChunk]:
    return [r for r in ranked if r.candidate.vault == vault]


def gather_evidence(rt: Runtime, ns: NotesSettings, question: str, vault_list: list[str], folder_list: list[str],
                    scope: Scope) -> Evidence:
    """Scope, retrieve and rank, then read the evidence vault's term statistics for the best passages."""
    # One connection, scoped to the caller, for every read of the request; given back before answering.
    with rt.connection(autocommit=True, scope=scope, read=True) as conn:
        sc = prepare_scope(conn, rt, ns, question, vault_list, folder_list, None, scope, rank_folders=True)
        found, ranked = retrieve_notes(conn, rt, question, sc)
        vault = evidence_vault(ranked)
        own = [r.candidate.chunk_id for r in in_vault(ranked, vault)[:ns.abstain_top_passages]]
        stats = query_term_stats(conn, question, [vault], scope.readable_levels(), own) if vault else []
    return Evidence(scope=sc.trace(), retrieval=found.run.decision(insufficient=not ranked), ranked=ranked,
                    stats=stats, query_embedding=sc.query_embedding, timings_ms=dict(found.run.timings_ms))


def retrieve_notes(conn: Connection, rt: Runtime, question: str, sc: NotesScope) -> tuple[Retrieval, list[RankedChunk]]:
    """The shared retrieve and rank stages over a notes scope (what `ask` and `search` both rank)."""
    prof = sc.profile
    found = retrieve_stage(conn, rt, prof, question, sc.filter, model=sc.model,
                           query_embedding=sc.query_embedding)
    signals = None
    if prof.w_note > 0 and found.query_embedding is not None:
        signals = note_signals(conn, found.model.id, found.query_embedding, found.candidates,
                               floor=prof.note_similarity_floor, inbound_weight=prof.note_inbound_weight)
    return found, rank_candidates(found.candidates, prof, prior=sc.prior, note_signals=signals)
