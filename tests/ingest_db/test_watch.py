"""`watch`: a save, create, rename or delete re-indexes only the vault it happened in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from rag.config import Settings
from rag.ingest.pipeline import IndexReport
from rag.ingest.watch import watch_vaults
from tests.ingest_db.helpers import add, with_settings
from tests.support.files import write_files


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the watcher"
        time.sleep(0.05)


def paths(conn: psycopg.Connection, vault: str) -> list[str]:
    return [r["source_path"] for r in conn.execute(
        "select source_path from documents d join vaults v on v.id = d.vault_id where v.name = %s order by 1",
        (vault,))]


def test_watch_reindexes_the_changed_vault(aconn: psycopg.Connection, settings: Settings, tmp_path: Path) -> None:
    notes = write_files(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    other = write_files(tmp_path / "other", {"x.md": "# X\n\nx\n"})
    add(aconn, "notes", notes)
    add(aconn, "other", other)
    reports: list[IndexReport] = []
    stop = threading.Event()
    fast = with_settings(settings, ingest={"watch_debounce_ms": 50})
    thread = threading.Thread(target=watch_vaults, args=(fast, None),
                              kwargs={"on_report": reports.append, "stop_event": stop}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(reports) == 1)
        assert [v.vault for v in reports[0].vaults] == ["notes", "other"]
        time.sleep(0.3)  # let the watcher settle before the first change

        (notes / "b.md").write_text("# B\n\nbeta\n")
        wait_for(lambda: paths(aconn, "notes") == ["a.md", "b.md"])
        wait_for(lambda: len(reports) >= 2)  # the report is handed over after the run's last commit
        assert [v.vault for v in reports[1].vaults] == ["notes"]  # only the changed vault ran

        (notes / "b.md").rename(notes / "c.md")
        wait_for(lambda: paths(aconn, "notes") == ["a.md", "c.md"])

        (notes / "a.md").write_text("# A\n\nalpha, edited\n")
        wait_for(lambda: "edited" in aconn.execute(
            "select string_agg(content, ' ') as t from chunks c join documents d on d.id = c.document_id "
            "where d.source_path = 'a.md'").fetchone()["t"])

        (notes / "c.md").unlink()
        wait_for(lambda: paths(aconn, "notes") == ["a.md"])
        assert all(r.vaults[0].error is None for r in reports)
        assert paths(aconn, "other") == ["x.md"]
    finally:
        stop.set()
        thread.join(timeout=60)  # a hang guard, not a timing assertion
    assert not thread.is_alive()


def test_a_burst_of_saves_is_debounced_into_one_reindex(aconn: psycopg.Connection, settings: Settings,
                                                         tmp_path: Path) -> None:
    notes = write_files(tmp_path / "notes", {"a.md": "# A\n\nalpha\n"})
    add(aconn, "notes", notes)
    reports: list[IndexReport] = []
    stop = threading.Event()
    slow = with_settings(settings, ingest={"watch_debounce_ms": 400})
    thread = threading.Thread(target=watch_vaults, args=(slow, ["notes"]),
                              kwargs={"on_report": reports.append, "stop_event": stop}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(reports) == 1)
        time.sleep(0.5)
        # Files the indexer ignores (other extensions, hidden folders) trigger nothing.
        (notes / "image.png").write_bytes(b"\x89PNG")
        (notes / ".obsidian").mkdir()
        (notes / ".obsidian" / "workspace.md").write_text("ui state\n")
        time.sleep(1.5)
        assert len(reports) == 1

        # Ten saves, each well inside the quiet period of the one before: one re-index picks up all.
        for i in range(10):
            (notes / f"burst{i}.md").write_text(f"# Burst {i}\n\nsaved in a hurry\n")
            time.sleep(0.02)
        wait_for(lambda: len(paths(aconn, "notes")) == 11)
        time.sleep(1.5)  # a second, late re-index would show up here
        assert len(reports) == 2, [r.to_dict() for r in reports]
        burst = reports[1].vaults[0]
        assert (burst.files_indexed, burst.files_unchanged) == (10, 1)
    finally:
        stop.set()
        thread.join(timeout=60)  # a hang guard, not a timing assertion
    assert not thread.is_alive()
