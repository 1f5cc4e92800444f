"""Where a notes question is searched: vaults, the folders the user named, clearance, and the folder prior.

The user's folders restrict the search (each with its subfolders). Every other folder in the vaults
is searched too: the folder ranking (the user's folders first, then the LLM's order or, without
one, the similarity of the question to each folder's centroid) only moves scores, through a prior
multiplier `(1 - w) + w * position_weight` with position weights 1.0, 0.9, ... min 0.1 and `w` the
setting `folder_prior_weight` (centroid order) or `folder_prior_weight_llm` (LLM order). When `w`
is 0, no folder ranking is computed at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag.access import Scope
from rag.config import NotesSettings
from rag.config_profiles import Profile, get_profile, load_profiles
from rag.errors import NotFoundError
from rag.llm import LLM, AskedAhead
from rag.notes.ask_trace import FolderTrace, ScopeTrace, SelectedFolder
from rag.notes.folders import (
    Folder,
    FolderScope,
    FolderSelection,
    folder_rank_messages,
    list_folders,
    resolve_user_folders,
    select_folders,
)
from rag.notes.question import folder_weights
from rag.retrieval import retrieve
from rag.retrieval.filters import vault_names as filter_vault_names
from rag.retrieval.stage import indexed_model
from rag.runtime import Runtime
from rag.store import models
from rag.store.database import Connection
from rag.store.vaults import check_known, vault_names
from rag.types import Candidate


@dataclass
class NotesScope:
    vaults: list[str]
    filter: dict[str, Any]
    profile: Profile
    model: models.EmbeddingModelRef | None = None
    query_embedding: np.ndarray | None = None
    selection: FolderSelection | None = None
    prior_weight: float = 0.0
    available: list[Folder] = field(default_factory=list)
    user_scopes: list[FolderScope] = field(default_factory=list)
    weight_min: float = 0.1  # a folder the ranking left out (an LLM lists only some) weighs the minimum
    # The folder ranking, when its LLM call was started ahead to run while retrieval does: finished on
    # first use of the selection (`settle`), with the request's connection, which is still open then.
    pending: Callable[[], None] | None = field(default=None, repr=False)

    def settle(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()

    def folder_weight(self, vault: str, folder: str) -> float:
        self.settle()
        if self.selection is None:
            return 1.0
        probe = Folder(vault, folder)
        return next((s.weight for s in self.selection.scopes if s.covers(probe)), self.weight_min)

    @property
    def prior(self) -> Callable[[Candidate], float] | None:
        self.settle()
        if self.selection is None or self.prior_weight <= 0:
            return None
        w = self.prior_weight

        def multiplier(c: Candidate) -> float:
            folder = str((c.metadata or {}).get("folder") or "")
            return (1.0 - w) + w * self.folder_weight(c.vault, folder)

        return multiplier

    def trace(self) -> ScopeTrace:
        """Where the question was searched (the folders' part of `AskTrace`)."""
        self.settle()
        searched = [f.label for f in self.available if not self.user_scopes
                    or any(s.covers(f) for s in self.user_scopes)]
        sel = self.selection
        folders = FolderTrace(
            searched=searched, prior_weight=self.prior_weight, restricted_to=[s.label for s in self.user_scopes],
            method=sel.method if sel else "none",
            selected=[SelectedFolder(folder=s.label, vault=s.vault, source=s.source, weight=s.weight)
                      for s in sel.scopes] if sel else [],
            available=[f.label for f in sel.available] if sel else [], notes=list(sel.notes) if sel else [],
            llm_answer=sel.llm_answer if sel else None)
        return ScopeTrace(vaults=self.vaults, folders=folders, filter=self.filter)


def resolve_vaults(conn: Any, requested: Sequence[str], scope: Scope) -> list[str]:
    """Vault names to search: the requested ones (each must exist), else every vault the scope allows."""
    allowed = scope.check_vaults(list(requested) or None)  # AuthError for a vault outside the scope
    known = vault_names(conn)
    if not known:
        raise NotFoundError("there are no vaults yet: add one with `ragpg vault add`, then run `ragpg index`")
    if requested:
        return check_known(requested, known)
    return [v for v in known if allowed is None or v in allowed]


def _indexed_folders(conn: Any, names: Sequence[str], scope: Scope) -> list[Folder]:
    available = list_folders(conn, names, scope)
    if not available:
        which = f"vault '{names[0]}'" if len(names) == 1 else f"vaults {', '.join(names)}" if names else "any vault"
        raise NotFoundError(f"nothing is indexed in {which} yet: run `ragpg index` first")
    return available


def notes_filter(names: Sequence[str], user_scopes: Sequence[FolderScope], base: Mapping[str, Any] | None,
                 scope: Scope) -> dict[str, Any]:
    """One filter: the vaults, the user's folders (each in its vault), the caller's filter and clearance."""
    parts: list[dict[str, Any]] = [dict(base)] if base else []
    if user_scopes:
        parts.append({"$or": [{"vault": s.vault, **s.filter()} if s.filter() else {"vault": s.vault}
                              for s in user_scopes]})
    combined = parts[0] if len(parts) == 1 else ({"$and": parts} if parts else None)
    return scope.restrict_filter(combined, list(names))


def notes_profile(rt: Runtime, ns: NotesSettings, match_count: int | None = None) -> Profile:
    prof = get_profile(ns.profile, load_profiles(rt.settings))
    if match_count is not None and match_count > prof.match_count:
        prof = prof.model_copy(update={"match_count": min(match_count, retrieve.SQL_MAX_MATCH_COUNT)})
    return prof


def prepare_scope(conn: Connection, rt: Runtime, ns: NotesSettings, question: str, vault_list: list[str],
                  folder_list: list[str], base: dict[str, Any] | None, scope: Scope, *, rank_folders: bool,
                  match_count: int | None = None) -> NotesScope:
    """Resolve vaults and folders, build the filter and (when it weighs anything) the folder prior.
    `conn` is the request's connection, scoped to the caller."""
    prof = notes_profile(rt, ns, match_count)
    names = resolve_vaults(conn, vault_list, scope)
    if base and "vault" in base:  # a vault named in the filter narrows the vaults searched
        wanted = filter_vault_names(base)
        base = {k: v for k, v in base.items() if k != "vault"}
        names = [n for n in names if n in wanted]
        if not names:
            return NotesScope([], {}, prof)
    available = _indexed_folders(conn, names, scope)
    user_scopes = resolve_user_folders(folder_list, available) if folder_list else []
    model = indexed_model(conn, rt) if prof.retrieval != "lexical" else None
    sc = NotesScope(names, notes_filter(names, user_scopes, base, scope), prof, model, available=available,
                    user_scopes=user_scopes, weight_min=ns.folder_weight_min)
    if model is not None:
        sc.query_embedding = rt.embedder.embed_query(question)
    weight = ns.folder_prior_weight_llm if rt.llm is not None else ns.folder_prior_weight
    # Folders the user named are the whole search: ranking the others would weigh nothing found.
    if rank_folders and weight > 0 and len(available) > 1 and model is not None and not user_scopes:
        llm = rt.llm
        if llm is not None:  # asked now, answered while retrieval (and its corrections) run
            llm = AskedAhead(llm, folder_rank_messages(question, available), max_tokens=ns.folder_rank_max_tokens)

        def select() -> None:
            sc.selection = _select(conn, rt, ns, question, folder_list, available, names, model, sc.query_embedding,
                                   llm)
            # An LLM that failed or named no known folder leaves the centroid (or name) order: weighed as that.
            sc.prior_weight = weight if llm is None or "llm" in sc.selection.method else ns.folder_prior_weight

        sc.pending = select
        if llm is None:
            sc.settle()
    return sc


def _select(conn: Connection, rt: Runtime, ns: NotesSettings, question: str, folder_list: list[str],
            available: list[Folder], names: list[str], model: models.EmbeddingModelRef,
            embedding: Any, llm: LLM | None) -> FolderSelection:
    def centroids() -> list[tuple[str, str, float]]:
        rows = retrieve.match_folders(conn, model, embedding, vaults=names,
                                      match_count=min(max(len(available), 1), retrieve.SQL_MAX_MATCH_COUNT),
                                      settings=rt.settings.retrieval)
        return [(r.vault, r.folder, r.similarity) for r in rows]

    return select_folders(question, folder_list, available, llm=llm, centroids=centroids,
                          weights=lambda n: folder_weights(n, ns), max_tokens=ns.folder_rank_max_tokens)
