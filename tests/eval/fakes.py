"""Search functions for eval tests: real callables with the `SearchFn` interface, no mocks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag.errors import NotFoundError
from rag.eval import EvalHit, GoldenCase


@dataclass
class ScriptedSearch:
    """Returns a canned hit (or raises a canned error) per case id; records (case id, depth)."""

    outcomes: Mapping[str, EvalHit | Exception] = field(default_factory=dict)
    default: EvalHit = field(default_factory=EvalHit)
    calls: list[tuple[str, int]] = field(default_factory=list)

    def __call__(self, case: GoldenCase, depth: int) -> EvalHit:
        self.calls.append((case.id, depth))
        outcome = self.outcomes.get(case.id, self.default)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@dataclass
class VaultSearch:
    """A tiny keyword search over named in-memory vaults; unknown vault names are an input error,
    as they are for the real retrieval."""

    vaults: Mapping[str, Mapping[str, str]]  # vault -> source path -> text

    def __call__(self, case: GoldenCase, depth: int) -> EvalHit:
        for name in case.vaults:
            if name not in self.vaults:
                raise NotFoundError(f"vault '{name}' does not exist")
        names = case.vaults or tuple(self.vaults)
        words = set(case.query.lower().split())
        scored = [
            (len(words & set(text.lower().split())), path)
            for name in names
            for path, text in self.vaults[name].items()
            if not case.folders or any(path.startswith(f"{folder}/") for folder in case.folders)
        ]
        ranked = sorted(((-score, path) for score, path in scored if score > 0))[:depth]
        return EvalHit.from_pairs((path, 0) for _, path in ranked)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
