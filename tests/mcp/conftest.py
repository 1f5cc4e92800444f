"""A fixed pair of vaults on disk, indexed by the real pipeline (hash embedder) into the per-test
database, with API keys of several scopes: what every MCP test reads through the tools."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.support.files import write_files

PUBLIC_MARK, INTERNAL_MARK, RESTRICTED_MARK, WORK_MARK = "SUNFLOWER", "BLUEHERON", "ZEBRAQUARTZ", "KINGFISHER"
# The tail of "Your notes mention X but not Y." / "Your notes do not mention Y.": Y is the question's own words.
# the question's own name, repeated by the answer and by its reason ("why": "... never mention X, which the
# question asks about"): the only place a hidden note's word may appear, because the asker wrote it
NOT_MENTIONED = re.compile(r"(?:but not|do not mention) [^.]*\.|never mention [^,]*, which the question asks about")

TOMATOES = (
    "# Tomatoes\n"  # line 1
    "\n"
    f"Tomatoes need full sun and {PUBLIC_MARK} compost.\n"  # line 3
    "\n"
    "## Watering\n"  # line 5
    "\n"
    "Water tomatoes deeply twice a week, in the morning.\n"  # line 7
    "\n"
    "## Harvest\n"  # line 9
    "\n"
    "Pick tomatoes when they are fully red and slightly soft.\n"  # line 11
)
FILES = {
    "garden": {
        "tomatoes.md": TOMATOES,
        "plans/roadmap.md": (f"---\nconfidentiality: internal\n---\n# Roadmap\n\nThe tomatoes roadmap codename "
                             f"{INTERNAL_MARK} ships in spring. Tomatoes watering plan.\n"),
        "plans/secret.md": (f"---\nconfidentiality: restricted\n---\n# Secret tomatoes\n\nTomatoes launch code "
                            f"{RESTRICTED_MARK} is restricted. Tomatoes need watering, see [[tomatoes]].\n"),
    },
    "work": {"meeting.md": f"# Meeting\n\nTomatoes were discussed at the meeting, marker {WORK_MARK}.\n"},
}


@dataclass(frozen=True)
class Corpus:
    roots: dict[str, Path]
    admin: str  # every vault, restricted clearance
    garden_public: str  # vault garden, public only
    work: str  # vault work only, restricted clearance


def write_vaults(base: Path) -> dict[str, Path]:
    return {vault: write_files(base / vault, files) for vault, files in FILES.items()}


@pytest.fixture
def corpus(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> Corpus:
    roots = write_vaults(tmp_path / "vaults")
    for vault, root in roots.items():
        add_vault(conn, NewVault(name=vault, path=root))
    conn.commit()
    report = index_vaults(settings)
    assert not report.failed, report.to_dict()

    def make(name: str, **kw: object) -> str:
        return key_store.create_key(conn, name, **kw)[1]  # type: ignore[arg-type]

    return Corpus(roots=roots, admin=make("admin", vaults=[], all_vaults=True, clearance="restricted"),
                  garden_public=make("garden-public", vaults=["garden"], clearance="public"),
                  work=make("work", vaults=["work"], clearance="restricted"))
