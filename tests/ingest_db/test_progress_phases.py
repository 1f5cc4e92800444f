"""Issue 47: progress a person can read. `index` says what it does from its first second (the help vault
sat at `0/47` and `0/?` for 95 s while the model loaded); Ctrl-C on `index` is one line, exit 130 and a
run recorded as interrupted; Ctrl-C on `watch` is exit 130 without watchfiles' warning."""

from __future__ import annotations

import io
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from rich.console import Console

from rag.config import EmbeddingSettings, Settings
from rag.embed import register_provider
from rag.embed.hash import HashEmbedder
from rag.ingest.pipeline import index_vaults
from tests.ingest_db.helpers import add, cli_env, with_settings
from tests.support.files import write_files

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
NOTES = {f"n{i}.md": f"# Note {i}\n\nThe walnut grove, note {i}.\n" for i in range(3)}
HANG_GUARD_S = 120  # only a hung child waits this long; nothing here is timed


class Recording:
    """An IndexProgress that keeps every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def phase(self, text: str) -> None:
        self.calls.append(("phase", text))

    def begin_vault(self, vault: str, files: int) -> None:
        self.calls.append(("begin_vault", files))

    def files_done(self, n: int) -> None:
        self.calls.append(("files_done", n))

    def chunks_queued(self, n: int) -> None:
        self.calls.append(("chunks_queued", n))

    def chunks_done(self, n: int) -> None:
        self.calls.append(("chunks_done", n))


class SlowToLoad(HashEmbedder):
    """A fake embedder whose model takes a while to load: what it sees at that moment is recorded."""

    on_load: list[object] = []

    def load(self) -> None:
        for look in SlowToLoad.on_load:
            look()  # type: ignore[operator]


@pytest.fixture
def slow_to_load(settings: Settings) -> Iterator[Settings]:
    def factory(arg: str, s: EmbeddingSettings) -> HashEmbedder:
        return SlowToLoad(s.hash_dims, batch_size=s.batch_size)

    register_provider("slowload", factory, replace=True)
    SlowToLoad.on_load = []
    yield with_settings(settings, embedding={"model": "slowload"})
    SlowToLoad.on_load = []


def test_each_phase_is_said_before_it_starts(aconn: psycopg.Connection, slow_to_load: Settings,
                                             tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", NOTES))
    progress = Recording()
    SlowToLoad.on_load = [lambda: progress.calls.append(("loaded", None))]
    report = index_vaults(slow_to_load, ["v"], progress=progress)
    assert report.vaults[0].error is None
    said = [what for kind, what in progress.calls if kind == "phase"]
    phases = [p for i, p in enumerate(said) if i == 0 or said[i - 1] != p]  # a phase said again is one line
    assert phases == ["connecting to the database", "v: walking the folder", "v: reading files",
                      "loading the embedding model (hash/feature-hash-384)", "v: embedding", "v: building indexes"]
    kinds = [kind for kind, _ in progress.calls]
    # the model's load is announced first, and happens before any chunk is embedded or file written
    assert kinds.index("loaded") == kinds.index("phase", kinds.index("begin_vault") + 2) + 1
    assert kinds.index("loaded") < kinds.index("chunks_queued") < kinds.index("chunks_done")
    # chunks count as they are embedded, slice by slice, not when a batch is written
    queued = sum(n for kind, n in progress.calls if kind == "chunks_queued")
    assert queued == sum(n for kind, n in progress.calls if kind == "chunks_done") == report.vaults[0].chunks_written


def test_the_terminal_shows_the_phase_while_the_model_loads(aconn: psycopg.Connection, slow_to_load: Settings,
                                                            tmp_path: Path) -> None:
    from ragpg_cli.index import RichProgress

    add(aconn, "v", write_files(tmp_path / "v", NOTES))
    out = io.StringIO()
    seen: list[str] = []
    with RichProgress(False, console=Console(file=out, force_terminal=True, width=120)) as bars:
        def look() -> None:
            bars.progress.refresh()
            seen.append(ANSI.sub("", out.getvalue()).splitlines()[-1] if out.getvalue() else "")
            seen.append(ANSI.sub("", out.getvalue()))
        SlowToLoad.on_load = [look]
        index_vaults(slow_to_load, ["v"], progress=bars)
    shown = seen[-1]
    assert "loading the embedding model (hash/feature-hash-384)" in shown, shown
    assert "v: files" in shown and "0/3" in shown  # no file embedded yet, and the screen says why


# --- Ctrl-C, as SIGINT to a child process running the CLI -----------------------------------------

STUCK_CLI = """
import os, sys, time
from rag.embed import register_provider
from rag.embed.hash import HashEmbedder

class StuckLoading(HashEmbedder):
    def load(self):
        open(os.environ["RAGPG_TEST_MARK"], "w").close()
        time.sleep(600)

register_provider("stuck", lambda arg, s: StuckLoading(s.hash_dims, batch_size=s.batch_size))
from ragpg_cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def as_at_a_terminal() -> None:
    """The child's Ctrl-C as a terminal gives it, whatever the suite's own process inherited or set: an
    ignored or blocked SIGINT stays so across exec (a suite started in the background ignores it), and
    Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def wait_until(ready, proc: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + HANG_GUARD_S
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the child never got there"
        time.sleep(0.05)


@pytest.mark.parametrize("command", [("index",), ("reindex",)])
def test_ctrl_c_on_index_is_one_line_exit_130_and_recorded(aconn: psycopg.Connection, db_url: str,
                                                             tmp_path: Path, command: tuple[str, ...]) -> None:
    add(aconn, "v", write_files(tmp_path / "v", NOTES))
    mark = tmp_path / "loading"
    env = cli_env(db_url, tmp_path, RAGPG_EMBEDDING__MODEL="stuck", RAGPG_TEST_MARK=str(mark))
    proc = subprocess.Popen([sys.executable, "-c", STUCK_CLI, *command], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)
    try:
        wait_until(mark.exists, proc)  # mid-run: the model is loading
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: interrupted (Ctrl-C)"), err
    assert "Traceback" not in err and out == ""
    runs = aconn.execute("select status, error, vaults from ragpg_index_runs_recent").fetchall()
    assert [(r["status"], r["vaults"]) for r in runs] == [("interrupted", ["v"])]
    assert runs[0]["error"].startswith("interrupted (Ctrl-C)")


def test_ctrl_c_on_watch_is_exit_130_without_a_watchfiles_warning(aconn: psycopg.Connection, db_url: str,
                                                                  tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", NOTES))
    env = cli_env(db_url, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "ragpg_cli.main", "watch", "v"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_at_a_terminal)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], HANG_GUARD_S)
        assert ready, "no summary of the first run"
        assert "3 files seen" in proc.stdout.readline()  # the first run is done: now it watches
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "watchfiles" not in err and "WARNING" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "stopped watching (Ctrl-C)"
