"""The search functions `ragpg eval` scores: the real system behind the `SearchFn` seam.

Which path a run exercises follows from the profile and the mode:

* profile `notes`, mode `ask` (the default): `rag.notes.ask.ask`, as `ragpg ask` runs it. The
  ranking is the answer's reranked candidate pool (the passages it drew on first, then the rest
  by final score) up to its first `k` distinct notes, so recall and nDCG say whether the right
  notes were in reach; `abstained`
  and the answer text come from the response, so abstention and forbidden claims are scored
  on what a user would read.
* profile `notes`, mode `search`: `rag.notes.ask.search` (`ragpg search`: the first `k` notes, each
  with its best passages); no abstention of its own, so an empty result counts as abstaining.
* any profile with a `compute_context` mode (`auto`, `base`, `hyde`, `rewrite`, `multi`,
  `reverse`): `rag.compute_context` with that profile; the ranking is its ranked chunks and
  "insufficient" (nothing to put in the context) counts as abstaining. A case's folders become
  a folder filter.

A case's vaults win over `default_vaults` (the `--vault` option), which win over "every vault".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rag.errors import InputError
from rag.eval.golden import GoldenCase
from rag.eval.results import EvalHit
from rag.eval.runner import SearchFn
from rag.runtime import Runtime
from rag.types import MODES, Mode

NOTES_PROFILE = "notes"
DEFAULT_PROFILE = NOTES_PROFILE
ASK_MODE, SEARCH_MODE = "ask", "search"
NOTES_MODES = (ASK_MODE, SEARCH_MODE)
CONTEXT_MODES: tuple[str, ...] = MODES
CONTEXT_BUDGET_TOKENS = 4000


def default_mode(profile: str) -> str:
    return ASK_MODE if profile == NOTES_PROFILE else "auto"


def all_modes() -> tuple[str, ...]:
    return (*NOTES_MODES, *CONTEXT_MODES)


def resolve_mode(profile: str, mode: str | None) -> str:
    """The mode a run uses; `ask` and `search` belong to the notes profile only."""
    chosen = mode or default_mode(profile)
    if chosen in NOTES_MODES and profile != NOTES_PROFILE:
        raise InputError(f"mode '{chosen}' runs the notes answering path and needs --profile {NOTES_PROFILE}")
    if chosen not in all_modes():
        raise InputError(f"unknown mode '{chosen}' (known: {', '.join(all_modes())})")
    return chosen


@dataclass
class SystemSearch:
    """A `SearchFn` over the real system; build it with `make_search_fn`."""

    runtime: Runtime
    profile: str
    mode: str
    default_vaults: tuple[str, ...] = ()

    def __call__(self, case: GoldenCase, depth: int) -> EvalHit:
        vaults = list(case.vaults or self.default_vaults) or None
        if self.mode == ASK_MODE:
            return self._ask(case, vaults, depth)
        if self.mode == SEARCH_MODE:
            return self._search(case, vaults, depth)
        return self._context(case, vaults, depth)

    def _ask(self, case: GoldenCase, vaults: list[str] | None, depth: int) -> EvalHit:
        from rag.notes.ask import ask

        if case.filters:
            raise InputError("the ask path takes no metadata filters; use --mode search or a context mode")
        response = ask(case.query, vaults=vaults, folders=list(case.folders), debug=True, runtime=self.runtime)
        candidates = response.debug.candidates if response.debug else []
        pairs = first_notes([(c.path, c.ordinal) for c in candidates], depth)
        # The answer is what the reader sees, the abstention sentence included: so forbidden claims are
        # scored on every case that lists them, and the metric set does not depend on what abstained.
        return EvalHit.from_pairs(pairs, answer=response.answer, abstained=response.abstained)

    def _search(self, case: GoldenCase, vaults: list[str] | None, depth: int) -> EvalHit:
        from rag.notes.ask import search

        response = search(case.query, vaults=vaults, folders=list(case.folders), k=depth,
                          filters=dict(case.filters) or None, runtime=self.runtime)
        return EvalHit.from_pairs((item.source_path, item.ordinal) for item in response.items)

    def _context(self, case: GoldenCase, vaults: list[str] | None, depth: int) -> EvalHit:
        from rag.compute import compute_context

        result = compute_context(case.query, vaults=vaults, filters=_with_folders(case.filters, case.folders),
                                 profile=self.profile, mode=cast(Mode, self.mode),  # resolve_mode checked it
                                 budget_tokens=CONTEXT_BUDGET_TOKENS,
                                 runtime=self.runtime)
        pairs = [(r.candidate.source_path, r.candidate.ordinal) for r in result.ranked]
        return EvalHit.from_pairs(pairs[:depth], abstained=result.insufficient)


def first_notes(pairs: Sequence[tuple[str, int]], notes: int) -> list[tuple[str, int]]:
    """The ranked passages of the first `notes` distinct notes: recall@5 asks whether a required note is
    among the first five notes, which ten passages (several from one note) may not reach."""
    seen: set[str] = set()
    kept: list[tuple[str, int]] = []
    for path, ordinal in pairs:
        if path not in seen and len(seen) == notes:
            break
        seen.add(path)
        kept.append((path, ordinal))
    return kept


def _with_folders(filters: Mapping[str, Any], folders: Sequence[str]) -> dict[str, Any] | None:
    """The case's filter, narrowed to its folders (each with its subfolders)."""
    parts: list[dict[str, Any]] = [dict(filters)] if filters else []
    if folders:
        scopes: list[dict[str, Any]] = []
        for folder in folders:
            name = folder.strip("/")
            scopes += [{"folder": name}, {"folder": {"$prefix": name + "/"}}]
        parts.append({"$or": scopes})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def make_search_fn(runtime: Runtime, profile: str = DEFAULT_PROFILE, mode: str | None = None,
                   vaults: Sequence[str] = ()) -> SearchFn:
    """The search function for a profile and mode; an unknown profile or mode is an InputError."""
    from rag.config_profiles import get_profile, load_profiles

    get_profile(profile, load_profiles(runtime.settings))  # NotFoundError (an InputError) naming the known ones
    return SystemSearch(runtime, profile, resolve_mode(profile, mode), tuple(dict.fromkeys(vaults)))
