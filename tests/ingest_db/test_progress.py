"""`ragpg index` on a terminal shows progress bars on stderr; piped or `--quiet`, it prints none."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

import psycopg

from tests.ingest_db.helpers import RAGPG, cli_env
from tests.support.files import write_files

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run ragpg with stderr on a pseudo-terminal (stdout piped); returns (code, stdout, terminal text)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*RAGPG, *args], env={**env, "TERM": "xterm-256color", "COLUMNS": "100"},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out, ANSI.sub("", b"".join(chunks).decode(errors="replace"))


def test_progress_bars_on_a_terminal_only(aconn: psycopg.Connection, db_url: str, tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {f"n{i:02d}.md": f"# Note {i}\n\nbody {i}\n" for i in range(40)})
    env = cli_env(db_url, tmp_path)
    assert subprocess.run([*RAGPG, "vault", "add", "v", str(root)], env=env, capture_output=True).returncode == 0

    code, out, terminal = run_on_a_terminal(["index", "v"], env)
    assert code == 0 and out.startswith("v: 40 files seen, 40 indexed")
    assert "v: files" in terminal and "v: chunks" in terminal, terminal
    assert "40/40" in terminal, terminal  # the files bar reached its total
    assert re.search(r"ETA (\d+:\d\d:\d\d|-:--:--)", terminal), terminal  # files: time remaining
    assert "━" in terminal  # rich's bar glyph

    (root / "n00.md").write_text("# Note 0\n\nchanged\n")
    code, out, terminal = run_on_a_terminal(["index", "v", "--quiet"], env)
    assert code == 0 and "1 indexed" in out
    assert "v: files" not in terminal and "━" not in terminal

    piped = subprocess.run([*RAGPG, "reindex"], env=env, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""  # not a terminal: no bar, no escape codes


def test_count_bar_shows_done_of_total_and_an_eta() -> None:
    """The bar `ragpg eval` (cases) and `ragpg eval-beir` (queries) draw on a terminal."""
    import io

    from rich.console import Console

    from ragpg_cli.progress import CountBar

    out = io.StringIO()
    with CountBar("cases", 4, console=Console(file=out, force_terminal=True, width=100)) as bar:
        for _ in range(4):
            bar.advance()
    text = ANSI.sub("", out.getvalue())
    assert "cases" in text and "4/4" in text and re.search(r"ETA \d+:\d\d:\d\d", text), text
    quiet = io.StringIO()
    with CountBar("cases", 4, quiet=True, console=Console(file=quiet, force_terminal=True)) as bar:
        bar.advance()
    assert quiet.getvalue() == ""


def test_index_bars_last_one_run_and_are_cleared_before_the_summary() -> None:
    """`ragpg watch` indexes again and again in one process: each run's bars are removed and the
    display stopped when the run ends, so the summary is not glued to bars that keep ticking and the
    next run starts with bars of its own."""
    import io

    from rich.console import Console

    from ragpg_cli.index import RichProgress

    out = io.StringIO()
    with RichProgress(False, console=Console(file=out, force_terminal=True, width=100)) as bars:
        bars.begin_vault("v", 3)
        bars.files_done(3)
        assert bars.live and len(bars.progress.tasks) == 2
        bars.finish()
        assert not bars.live and bars.progress.tasks == [] and not bars.progress.live.is_started
        shown = len(out.getvalue())
        out.write("v: 3 files seen, 3 indexed\n")  # the summary, on a line of its own
        bars.begin_vault("v", 1)  # the next run in `watch`
        assert bars.live and [t.description for t in bars.progress.tasks] == ["v: files", "v: chunks"]
        assert [t.completed for t in bars.progress.tasks] == [0, 0]  # fresh bars, not the old ones
    assert not bars.live and bars.progress.tasks == []
    assert out.getvalue()[shown:].startswith("v: 3 files seen")
