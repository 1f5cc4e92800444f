"""`ragpg ask --explain`: the record of an answer (`AskTrace`) told in plain words.

Which vaults and folders were searched and how they were weighted, whether the question was split
into facets, the top candidates and which search found each (words, meaning, or both), and why it
answered or abstained. The full numbers stay in `--debug --json`.
"""

from __future__ import annotations

from rag.notes.ask_trace import AskTrace, FoundBy, ScopeTrace
from rag.notes.decision import explanation
from rag.places import shown_heading
from rag.types import Decision

TOP_CANDIDATES = 5
SELECTED_FOLDERS_SHOWN = 5
_FOUND_BY: dict[FoundBy, str] = {"both": "found by both word and meaning search", "lexical": "found by word search only",
                                 "vector": "found by meaning search only", "neither": "found by a correction pass"}
_METHODS = {"llm": "ranked by the language model", "centroid": "ranked by how close each folder's notes are "
            "to the question", "user": "in the order you named them", "all": "in name order"}


def _folders(scope: ScopeTrace | None) -> list[str]:
    if scope is None:
        return []
    folders = scope.folders
    vaults = ", ".join(scope.vaults) or "none"
    where = (f"only the folders you named ({', '.join(folders.restricted_to)})" if folders.restricted_to
             else f"every folder ({len(folders.searched)})")
    lines = [f"Searched vault{'s' if len(scope.vaults) > 1 else ''} {vaults}: {where}."]
    if folders.prior_weight and folders.selected:
        order = ", ".join(s.folder for s in folders.selected[:SELECTED_FOLDERS_SHOWN])
        how = _METHODS.get(folders.method, "ranked")
        lines.append(f"Folders were weighted ({how}; the prior counts {folders.prior_weight:.0%}): first {order}. "
                     "No folder was left out.")
    else:
        lines.append("All folders counted equally.")
    return lines


def _retrieval(r: Decision | None) -> list[str]:
    if r is None:
        return []
    lines = []
    if r.facets:
        lines.append("The question joins several topics, so each was also searched on its own: "
                     + "; ".join(f"“{f}”" for f in r.facets) + ".")
    if r.winner != "base":
        lines.append(f"The first search looked weak, so a corrected search was used ({r.reason}).")
    return lines


def _candidates(trace: AskTrace) -> list[str]:
    if not trace.candidates:
        return ["Nothing in the notes matched."]
    lines = ["Best passages:"]
    for c in trace.candidates[:TOP_CANDIDATES]:
        shown = shown_heading(c.path, c.heading)
        heading = f" — {shown}" if shown else ""
        lines.append(f"  {c.rank}. {c.path}{heading} ({_FOUND_BY[c.found_by]})")
    return lines


def explain_lines(trace: AskTrace | None) -> list[str]:
    """Plain-language lines for the record of an `ask` (empty without one)."""
    if trace is None:
        return []
    lines = [*_folders(trace.scope), *_retrieval(trace.retrieval), *_candidates(trace)]
    if trace.k.value:
        lines.append(f"The answer draws on up to {trace.k.value} passages.")
    if trace.decision is not None:
        lines.append(f"Decision: {explanation(trace.decision)}.")
    return lines
