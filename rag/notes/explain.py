"""`ragpg ask --explain`: the debug record of an answer told in plain words.

Which vaults and folders were searched and how they were weighted, whether the question was split
into facets, the top candidates and which search found each (words, meaning, or both), and why it
answered or abstained. The full numbers stay in `--debug --json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TOP_CANDIDATES = 5
_FOUND_BY = {"both": "found by both word and meaning search", "lexical": "found by word search only",
             "vector": "found by meaning search only", "neither": "found by a correction pass"}
_METHODS = {"llm": "ranked by the language model", "centroid": "ranked by how close each folder's notes are "
            "to the question", "user": "in the order you named them", "all": "in name order"}


def _folders(trace: Mapping[str, Any]) -> list[str]:
    folders = trace.get("folders") or {}
    searched: Sequence[str] = folders.get("searched") or []
    vaults = ", ".join(trace.get("vaults") or []) or "none"
    restricted = folders.get("restricted_to") or []
    where = (f"only the folders you named ({', '.join(restricted)})" if restricted
             else f"every folder ({len(searched)})")
    lines = [f"Searched vault{'s' if ',' in vaults else ''} {vaults}: {where}."]
    weight = folders.get("prior_weight") or 0.0
    selected = folders.get("selected") or []
    if weight and selected:
        order = ", ".join(s["folder"] for s in selected[:5])
        how = _METHODS.get(str(folders.get("method")), "ranked")
        lines.append(f"Folders were weighted ({how}; the prior counts {weight:.0%}): first {order}. "
                     "No folder was left out.")
    else:
        lines.append("All folders counted equally.")
    return lines


def _retrieval(trace: Mapping[str, Any]) -> list[str]:
    r = trace.get("retrieval") or {}
    lines = []
    facets = r.get("facets") or []
    if facets:
        lines.append("The question joins several topics, so each was also searched on its own: "
                     + "; ".join(f"“{f}”" for f in facets) + ".")
    if r.get("winner") not in (None, "base"):
        lines.append(f"The first search looked weak, so a corrected search was used ({r.get('reason')}).")
    return lines


def _candidates(trace: Mapping[str, Any]) -> list[str]:
    cands = list(trace.get("candidates") or [])[:TOP_CANDIDATES]
    if not cands:
        return ["Nothing in the notes matched."]
    lines = ["Best passages:"]
    for c in cands:
        heading = f" — {c['heading']}" if c.get("heading") else ""
        lines.append(f"  {c['rank']}. {c['path']}{heading} ({_FOUND_BY.get(c.get('found_by', ''), 'found')})")
    return lines


def explain_lines(trace: Mapping[str, Any] | None) -> list[str]:
    """Plain-language lines for a debug trace of `ask` (empty without one)."""
    if not trace:
        return []
    k = (trace.get("k") or {}).get("value")
    lines = [*_folders(trace), *_retrieval(trace), *_candidates(trace)]
    if k:
        lines.append(f"The answer draws on up to {k} passages.")
    decision = trace.get("abstention") or {}
    if decision.get("reason"):
        lines.append(f"Decision: {decision['reason']}.")
    return lines
