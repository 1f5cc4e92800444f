"""A small notes vault written as real files and indexed by the real pipeline into the per-test
database (hash embedder), a runtime over it, and `ragpg serve`'s app under uvicorn on loopback with
API keys of public and restricted clearance."""

from __future__ import annotations

import inspect
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.server.conftest import with_server
from tests.support.files import write_files

# pytest-asyncio runs only tests marked asyncio. The standard suite's async tests are not marked and
# may not be overridden (its test_no_overrides_DO_NOT_OVERRIDE), so they are marked where they are:
# the functions stay the suite's own.
for _name, _test in vars(RetrieversIntegrationTests).items():
    if _name.startswith("test_") and inspect.iscoroutinefunction(_test):
        pytest.mark.asyncio(_test)

VAULT = "notes"
QUERY = "how do I sync my notes between devices?"
SYNC_FOLDER = "Obsidian Sync"
RESTRICTED_NOTE = "Private/Sync recovery codes.md"
ODD_NAME = "Misc/Sync FAQ #1? 100%.md"
NOTES = {
    "Obsidian Sync/Set up Obsidian Sync.md": (
        "# Set up Obsidian Sync\n\nTo sync your notes between devices, open Settings, choose Sync and sign in."
        " Then connect each device to the same remote vault and your notes sync in the background.\n"),
    "Obsidian Sync/Sync settings.md": (
        "# Sync settings\n\nChoose which notes, attachments and settings sync between your devices:"
        " images, audio, PDFs and the appearance settings can each be switched on or off.\n"),
    "Obsidian Sync/Troubleshoot sync.md": (
        "# Troubleshoot sync\n\nIf notes do not sync between devices, check that every device is connected"
        " to the same remote vault and signed in to the same account.\n"),
    "Obsidian Sync/Version history.md": (
        "# Version history\n\nSync keeps the history of your notes: restore an earlier version of a note"
        " from any of your devices in the version history view.\n"),
    "Editing/Sync with git.md": (
        "# Sync with git\n\nSome people sync their notes between devices with a git repository instead:"
        " commit on one device, pull on the other.\n"),
    RESTRICTED_NOTE: (
        "---\nconfidentiality: restricted\n---\n# Sync recovery codes\n\nThe recovery codes to sync my notes"
        " between devices when the account is locked: 4417 9902 3318.\n"),
    # '#', '?' and '%' in a file name: over HTTP the passage's text is fetched by a URL made of it
    ODD_NAME: "# Sync FAQ\n\nCan I sync notes between devices for free? Only with git or a shared folder.\n",
    "Gardening/Tomatoes.md": "# Tomatoes\n\nWater tomatoes twice a week and pinch out the side shoots.\n",
}


def without_scores(metadata: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in ("score", "scores")}


@pytest.fixture
def runtime(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Iterator[Runtime]:
    """The `notes` vault indexed; a runtime over its database."""
    add_vault(conn, NewVault(name=VAULT, path=write_files(tmp_path / VAULT, NOTES)))
    conn.commit()
    report = index_vaults(settings, [VAULT])
    assert not report.failed, report.to_dict()
    rt = Runtime.from_settings(settings, pool_max_size=2)
    yield rt
    rt.close()


@dataclass(frozen=True)
class Served:
    url: str
    public_key: str  # vault `notes`, public clearance
    restricted_key: str  # vault `notes`, every level
    all_vaults_key: str  # every vault, every level


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(runtime: Runtime, settings: Settings, conn: psycopg.Connection) -> Iterator[Served]:
    """`ragpg serve`'s app under uvicorn on a free loopback port, over the indexed vault."""
    import uvicorn

    from ragpg_server.app import create_app, pool_size_for

    public = key_store.create_key(conn, "public-reader", vaults=[VAULT], clearance="public")[1]
    restricted = key_store.create_key(conn, "restricted-reader", vaults=[VAULT], clearance="restricted")[1]
    every = key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1]
    conn.commit()
    port = _free_port()
    s = with_server(settings, host="127.0.0.1", port=port)
    rt = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
    server = uvicorn.Server(uvicorn.Config(create_app(rt), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", public, restricted, every)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        rt.close()

