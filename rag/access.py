"""Who may see what: confidentiality levels, clearances and the scope of a caller.

Enforcement happens inside the SQL filter (vault and confidentiality conditions are added to
every retrieval), so restricted content never leaves the database without clearance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from rag.errors import AuthError, InputError

Level = Literal["public", "internal", "confidential", "restricted"]  # lowest first
CONFIDENTIALITY_LEVELS: tuple[str, ...] = get_args(Level)


def levels_up_to(clearance: str) -> tuple[str, ...]:
    if clearance not in CONFIDENTIALITY_LEVELS:
        raise InputError(f"unknown clearance '{clearance}' (use one of: {', '.join(CONFIDENTIALITY_LEVELS)})")
    return CONFIDENTIALITY_LEVELS[: CONFIDENTIALITY_LEVELS.index(clearance) + 1]


@dataclass(frozen=True)
class Scope:
    """What a caller may read. `vaults=None` means every vault."""

    vaults: tuple[str, ...] | None = None
    clearance: str = "restricted"
    principal: str = "local"
    can_index: bool = True  # may start index runs (a write); API keys only with `keys create --index`

    @classmethod
    def unrestricted(cls) -> Scope:
        return cls()

    def allows_vault(self, vault: str) -> bool:
        return self.vaults is None or vault in self.vaults

    def allows_level(self, level: str | None) -> bool:
        return (level or "public") in levels_up_to(self.clearance)

    def check_vaults(self, requested: Sequence[str] | None) -> tuple[str, ...] | None:
        """The vaults a request may search; asking for one outside the scope is an AuthError."""
        if not requested:
            return self.vaults
        denied = [v for v in requested if not self.allows_vault(v)]
        if denied:
            raise AuthError(f"this key may not read vault '{denied[0]}'", )
        return tuple(requested)

    def readable_levels(self) -> tuple[str, ...] | None:
        """The confidentiality levels this scope may read, or None when it may read every level."""
        if self.clearance == CONFIDENTIALITY_LEVELS[-1]:
            return None
        return levels_up_to(self.clearance)

    def restrict_filter(self, filter_: Mapping[str, Any] | None, vaults: Sequence[str] | None) -> dict[str, Any]:
        """Combine a caller's filter with the scope's vault and clearance conditions."""
        clauses: list[dict[str, Any]] = []
        if filter_:
            clauses.append(dict(filter_))
        if vaults is not None:
            clauses.append({"vault": {"$in": list(vaults)}})
        if self.clearance != CONFIDENTIALITY_LEVELS[-1]:
            clauses.append({"confidentiality": {"$in": list(levels_up_to(self.clearance))}})
        if not clauses:
            return {}
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
