"""Which folders a notes question is searched in, and in what order.

Order of the selection: a prior on scores (`rag.notes.scope`); every folder in the search's scope is
searched in one pass whatever its position:

1. the folders the user named, in the order named. A name is `folder` or `<vault>/folder`; it
   matches that folder and everything below it (`projects` covers `projects/alpha`), or, when no
   folder is called that, the folders whose name starts with it (`proj` → `projects`). A name
   matching nothing is an InputError that suggests close matches;
2. the remaining folders, ranked by the LLM (prompt `folder_rank`; the answer is a JSON array of
   folder names; the folders it leaves out weigh the minimum) or, without an LLM, by the similarity of
   the question to each folder's centroid (mean embedding, computed in SQL). When the LLM fails or
   its answer names no known folder, the centroid order is used.

The folder at position i weighs max(1.0 - 0.1·i, 0.1) (`rag.notes.question.folder_weights`).
Folders are `documents.folder` values (the file's directory relative to the vault root; '' is the
vault's top level, shown as `<vault>/(top level)`), always shown with their vault name.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.access import CONFIDENTIALITY_LEVELS, Scope, levels_up_to
from rag.errors import InputError, LLMError, NotFoundError, RagError
from rag.llm import LLM, Message
from rag.prompts import load_prompt
from rag.store.database import Connection

ROOT_LABEL = "(top level)"


@dataclass(frozen=True)
class Folder:
    """A folder holding indexed notes: `documents.folder` within one vault."""

    vault: str
    folder: str
    chunks: int = 0

    @property
    def label(self) -> str:
        return f"{self.vault}/{self.folder or ROOT_LABEL}"


@dataclass(frozen=True)
class FolderScope:
    """One search scope: an exact folder, or (for a folder the user named) a folder and its subfolders."""

    vault: str
    folder: str
    source: str  # "user", "llm", "centroid", "all"
    subtree: bool = False
    prefix: str | None = None  # a name the user gave that matched folders only as a string prefix
    weight: float = 1.0

    @property
    def label(self) -> str:
        if self.prefix is not None:
            return f"{self.vault}/{self.prefix}*"
        if self.subtree:
            return f"{self.vault}/{self.folder}/**" if self.folder else f"{self.vault}/**"
        return f"{self.vault}/{self.folder or ROOT_LABEL}"

    def covers(self, f: Folder) -> bool:
        if f.vault != self.vault:
            return False
        if self.prefix is not None:
            return f.folder.startswith(self.prefix)
        if self.subtree:
            return not self.folder or f.folder == self.folder or f.folder.startswith(self.folder + "/")
        return f.folder == self.folder

    def filter(self) -> dict[str, Any]:
        """The metadata filter (without the vault, which goes at the top level) of this scope."""
        if self.prefix is not None:
            return {"folder": {"$prefix": self.prefix}}
        if self.subtree and self.folder:
            return {"$or": [{"folder": self.folder}, {"folder": {"$prefix": self.folder + "/"}}]}
        if self.subtree:
            return {}
        return {"folder": self.folder}


@dataclass
class FolderSelection:
    scopes: list[FolderScope]
    available: list[Folder]
    method: str
    notes: list[str] = field(default_factory=list)
    llm_answer: str | None = None


# -- listing --------------------------------------------------------------------------------------

def list_folders(conn: Connection, vaults: Sequence[str], scope: Scope) -> list[Folder]:
    """Folders with at least one indexed passage the caller may read, by vault then folder."""
    levels = None
    if scope.clearance != CONFIDENTIALITY_LEVELS[-1]:
        levels = list(levels_up_to(scope.clearance))
    rows = conn.execute(
        "select v.name as vault, d.folder as folder, count(c.id) as chunks"
        " from documents d join vaults v on v.id = d.vault_id join chunks c on c.document_id = d.id"
        " where v.name = any(%(vaults)s) and (%(levels)s::text[] is null or d.confidentiality = any(%(levels)s))"
        " group by v.name, d.folder order by v.name, d.folder",
        {"vaults": list(vaults), "levels": levels}).fetchall()
    return [Folder(_get(r, "vault", 0), _get(r, "folder", 1), int(_get(r, "chunks", 2))) for r in rows]


def _get(row: Any, key: str, index: int) -> Any:
    return row[key] if isinstance(row, dict) else row[index]


# -- folders the user named -----------------------------------------------------------------------

def _clean(name: str) -> str:
    return name.strip().replace("\\", "/").strip("/")


def resolve_user_folders(names: Sequence[str], available: Sequence[Folder]) -> list[FolderScope]:
    """The scopes of the folders the user named (see the module doc); NotFoundError for a name matching nothing."""
    vault_names = sorted({f.vault for f in available})
    scopes: list[FolderScope] = []
    for raw in names:
        if not isinstance(raw, str) or not _clean(raw):
            raise InputError("a folder name is empty")
        name = _clean(raw)
        found = _match_named(name, available, vault_names)
        if not found:
            raise NotFoundError(_unknown_folder_message(raw.strip(), available))  # as an unknown vault
        for s in found:
            if s not in scopes:
                scopes.append(s)
    return scopes


def _match_named(name: str, available: Sequence[Folder], vault_names: Sequence[str]) -> list[FolderScope]:
    attempts: list[tuple[list[str], str]] = []
    head, _, rest = name.partition("/")
    if head in vault_names:
        attempts.append(([head], rest))  # `<vault>/folder` (or just `<vault>`: the whole vault)
    attempts.append((list(vault_names), name))
    for vaults, folder in attempts:
        for fold in (False, True):  # exact case first, then case-insensitive
            scopes = _match_in(vaults, folder, available, fold)
            if scopes:
                return scopes
    return []


def _match_in(vaults: Sequence[str], folder: str, available: Sequence[Folder], fold: bool) -> list[FolderScope]:
    def norm(s: str) -> str:
        return s.lower() if fold else s

    want = norm(folder)
    scopes = []
    for vault in vaults:
        mine = [f for f in available if f.vault == vault]
        if not want:
            scopes.append(FolderScope(vault, "", "user", subtree=True))
            continue
        subtree = [f for f in mine if norm(f.folder) == want or norm(f.folder).startswith(want + "/")]
        if subtree:
            exact = next((f.folder for f in subtree if norm(f.folder) == want), None)
            real = exact if exact is not None else subtree[0].folder[: len(want)]
            scopes.append(FolderScope(vault, real, "user", subtree=True))
            continue
        prefixed = sorted({f.folder for f in mine if norm(f.folder).startswith(want)})
        roots = [p for p in prefixed if not any(p.startswith(q + "/") for q in prefixed)]
        if len(roots) == 1:  # `proj` -> `projects` (and its subfolders)
            scopes.append(FolderScope(vault, roots[0], "user", subtree=True))
        elif roots:  # `2024-` -> `2024-01`, `2024-02`, ...
            scopes.append(FolderScope(vault, "", "user", prefix=roots[0][: len(want)]))
    return scopes


def _unknown_folder_message(name: str, available: Sequence[Folder]) -> str:
    choices = sorted({f.folder for f in available if f.folder} | {f.label for f in available})
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    if not close:
        lowered = name.lower()
        close = [c for c in choices if lowered in c.lower()][:3]
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    where = ", ".join(sorted({f.vault for f in available})) or "the selected vaults"
    return f"no folder named '{name}' in {where}{hint}"


# -- ranking the rest -----------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_folder_answer(text: str) -> list[str]:
    """Folder names from the LLM's answer: a JSON array, possibly in a code fence or after some prose.

    Raises ValueError when no JSON array of names can be found.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        for start in [i for i, ch in enumerate(chunk) if ch == "["]:
            try:
                value, _ = decoder.raw_decode(chunk[start:])
            except json.JSONDecodeError:
                continue
            if isinstance(value, list):
                found = [_item_name(v) for v in value]
                names = [n for n in found if n]
                if names or not value:
                    return names
    raise ValueError("no JSON array of folder names in the answer")


def _item_name(item: Any) -> str | None:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        for key in ("folder", "name", "path"):
            name = item.get(key)
            if isinstance(name, str):
                return name.strip()
    return None


def map_folder_names(names: Sequence[str], remaining: Sequence[Folder]) -> tuple[list[Folder], list[str]]:
    """The folders the names refer to (in order, no repeats) and the names that refer to none."""
    by_label = {f.label.lower(): f for f in remaining}
    by_bare: dict[str, list[Folder]] = {}
    for f in remaining:
        by_bare.setdefault((f.folder or ROOT_LABEL).lower(), []).append(f)
        if not f.folder:
            by_bare.setdefault(f.vault.lower(), []).append(f)
            by_bare.setdefault(f"{f.vault}/".lower(), []).append(f)
    picked: list[Folder] = []
    unknown: list[str] = []
    for raw in names:
        key = raw.strip().replace("\\", "/").lower()
        hit = by_label.get(key) or by_label.get(key.rstrip("/"))
        if hit is None:
            bare = by_bare.get(key.rstrip("/")) or by_bare.get(key)
            hit = bare[0] if bare and len(bare) == 1 else None
        if hit is None:
            unknown.append(raw)
        elif hit not in picked:
            picked.append(hit)
    return picked, unknown


def folder_rank_messages(question: str, remaining: Sequence[Folder]) -> list[Message]:
    """What the LLM is asked to rank `remaining` folders for `question`."""
    return [Message("user", load_prompt("folder_rank").render(question=question,
                                                              folders="\n".join(f.label for f in remaining)))]


def rank_with_llm(llm: LLM, question: str, remaining: Sequence[Folder], max_tokens: int,
                  selection: FolderSelection) -> list[Folder] | None:
    """The LLM's ranking of `remaining`, or None (noted in `selection`) when it gives none usable."""
    try:
        answer = llm.complete(folder_rank_messages(question, remaining), max_tokens=max_tokens)
    except LLMError as exc:
        selection.notes.append(f"folder ranking by the LLM failed ({exc}); searching every folder")
        return None
    selection.llm_answer = answer[:2000]
    try:
        names = parse_folder_answer(answer)
    except ValueError:
        selection.notes.append("the LLM's folder ranking was not a JSON array of names; searching every folder")
        return None
    picked, unknown = map_folder_names(names, remaining)
    if unknown:
        selection.notes.append(f"the LLM named unknown folders, ignored: {', '.join(unknown[:10])}")
    if not picked:
        selection.notes.append("the LLM's folder ranking named no known folder; searching every folder")
        return None
    return picked


def rank_by_centroid(centroids: Sequence[tuple[str, str, float]], remaining: Sequence[Folder]) -> list[Folder]:
    """`remaining` ordered by centroid similarity (best first); folders without a centroid go last."""
    order = {(v, f): (-sim, i) for i, (v, f, sim) in enumerate(centroids)}
    return sorted(remaining, key=lambda f: (order.get((f.vault, f.folder), (float("inf"), 0)), f.vault, f.folder))


def select_folders(question: str, user_folders: Sequence[str], available: Sequence[Folder], *,
                   llm: LLM | None, centroids: Any, weights: Any, max_tokens: int) -> FolderSelection:
    """Build the folder selection. `centroids()` returns (vault, folder, similarity) rows, best first;
    `weights(n)` the position weights of n scopes."""
    user = resolve_user_folders(user_folders, available) if user_folders else []
    remaining = [f for f in available if not any(s.covers(f) for s in user)]
    selection = FolderSelection([], list(available), "user" if user else "all")
    ranked: list[FolderScope] = []
    if len(remaining) == 1:
        ranked = [FolderScope(remaining[0].vault, remaining[0].folder, "all")]
        selection.method = "user+single" if user else "single"
    elif remaining:
        picked = rank_with_llm(llm, question, remaining, max_tokens, selection) if llm is not None else None
        if picked is not None:
            ranked = [FolderScope(f.vault, f.folder, "llm") for f in picked]
            method = "llm"
        else:
            try:
                order = rank_by_centroid(centroids(), remaining)
                method = "centroid" if llm is None else "all"
            except RagError as exc:
                selection.notes.append(f"folder centroids unavailable ({exc}); folders in name order")
                order, method = list(remaining), "all"
            ranked = [FolderScope(f.vault, f.folder, "centroid" if method == "centroid" else "all") for f in order]
        selection.method = f"user+{method}" if user else method
    scopes = [*user, *ranked]
    selection.scopes = [_weighted(s, w) for s, w in zip(scopes, weights(len(scopes)), strict=True)]
    return selection


def _weighted(s: FolderScope, weight: float) -> FolderScope:
    return FolderScope(s.vault, s.folder, s.source, s.subtree, s.prefix, weight)
