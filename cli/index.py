"""`ragpg index`, `ragpg reindex` and `ragpg watch`: incremental indexing of vaults.

Skips are reported (a warning line per file on stderr, listed under `--json`) but are not
failures; the exit code is non-zero only when a vault could not be indexed.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

import typer

from rag.config import Settings
from ragpg_cli.app import info, print_json, say, state
from ragpg_cli.terminal import json_for_terminal

# The indexer (numpy, markdown-it, psycopg, rich, watchfiles) loads when a command runs, not when
# `ragpg` starts: every other command pays nothing for it.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from rag.ingest.report import IndexReport

JSON_HELP = "Print a machine-readable JSON summary."
ALLOW_EMPTY_HELP = ("Confirm that a vault folder found empty (without the .obsidian folder it had, or lacking more "
                    "than ingest.max_gone_share of its indexed files) was really emptied: remove its documents. "
                    "Without it such a vault is reported unavailable (an unmounted share looks empty) and "
                    "nothing is removed.")
QUIET_HELP = "No progress bars."
REINDEX_QUIET_HELP = "No progress bars, and nothing printed when every vault succeeds (for cron)."


class RichProgress:
    """On stderr: a line saying what the run does now and for how long (connecting, walking, loading
    the embedding model, embedding, building indexes), then two bars, files (of the total, with a rate
    and an ETA) and chunks (written of those handed to the embedder so far, with a rate); nothing at
    all when quiet or stderr is not a terminal. The lines live for one index run: `finish` removes
    them and stops the display, so what is printed next (a run's summary, in `watch` the next run's
    bars) starts on a clean line instead of under bars that keep ticking."""

    def __init__(self, quiet: bool, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from ragpg_cli.progress import CountsOnly, EtaColumn, RateColumn

        self.enabled = not quiet and (console is not None or sys.stderr.isatty())
        self.progress = Progress(TextColumn("{task.description}"), CountsOnly(BarColumn()),
                                 CountsOnly(MofNCompleteColumn()), TimeElapsedColumn(), RateColumn(), EtaColumn(),
                                 console=console or Console(stderr=True), transient=True, disable=not self.enabled)
        self.current: TaskID | None = None  # the phase line
        self.files: TaskID | None = None
        self.chunks: TaskID | None = None
        self.chunks_total = 0
        self.phase_text = ""
        self.live = False

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish()

    def _drop_bars(self) -> None:
        for task in (self.current, self.files, self.chunks):
            if task is not None:
                self.progress.remove_task(task)
        self.current = self.files = self.chunks = None
        self.chunks_total = 0

    def _start(self) -> None:
        if not self.live:
            self.progress.start()
            self.live = True

    def phase(self, text: str) -> None:
        """What the run does now, from its first second; its clock restarts with each phase."""
        self._start()
        if self.current is None:
            self.current = self.progress.add_task(text, total=None, phase=True)
        elif self.phase_text != text:
            self.progress.reset(self.current, description=text)
        self.phase_text = text

    def begin_vault(self, vault: str, files: int) -> None:
        for task in (self.files, self.chunks):
            if task is not None:
                self.progress.remove_task(task)
        self.chunks_total = 0
        self._start()
        self.files = self.progress.add_task(f"{vault}: files", total=files)
        self.chunks = self.progress.add_task(f"{vault}: chunks", total=None)

    def chunks_queued(self, n: int) -> None:
        self.chunks_total += n
        if self.chunks is not None:
            self.progress.update(self.chunks, total=self.chunks_total)

    def files_done(self, n: int) -> None:
        if self.files is not None:
            self.progress.advance(self.files, n)

    def chunks_done(self, n: int) -> None:
        if self.chunks is not None:
            self.progress.advance(self.chunks, n)

    def finish(self) -> None:
        """The run is over: stop redrawing (the last frame shows the totals, then the transient bars
        are cleared) and drop the bars."""
        if self.live:
            self.progress.stop()
            self.live = False
        self._drop_bars()


def _run(settings: Settings, vaults: list[str] | None, quiet: bool, json_out: bool, allow_empty: bool = False,
         quiet_summary: bool = False) -> None:
    """One index run; `quiet_summary` (reindex --quiet, for cron) prints no summary when it succeeds."""
    from datetime import UTC

    from rag.errors import RagError
    from rag.ingest.pipeline import index_vaults
    from rag.ingest.run_log import record_cli_run
    from rag.store.locate import connect

    started = datetime.now(UTC)
    try:
        with RichProgress(quiet) as progress:
            report = index_vaults(settings, vaults, progress=progress, allow_empty=allow_empty)
    except KeyboardInterrupt:
        _interrupted(settings, vaults, started)
    if report.vaults:
        try:
            with connect(settings, autocommit=True) as conn:  # psql: select * from ragpg_index_runs_recent
                record_cli_run(conn, report, started)
        except RagError as exc:
            info(f"warning: index run not recorded: {exc}")
    _wait_for_read_replica(settings)
    _emit(report, json_out, summary=not (quiet_summary and not report.failed))
    _exit_on_failure(report)


def _interrupted(settings: Settings, vaults: list[str] | None, started: datetime) -> NoReturn:
    """Ctrl-C: the run is recorded as interrupted (`ragpg_index_runs_recent`), then one line, exit 130."""
    from rag.errors import RagError
    from rag.ingest.run_log import INTERRUPTED_ERROR, record_interrupted_run
    from rag.store.locate import connect
    from rag.store.vaults import resolve_vaults
    from ragpg_cli.exit_codes import INTERRUPTED

    try:
        with connect(settings, autocommit=True) as conn:
            record_interrupted_run(conn, [v.name for v in resolve_vaults(conn, vaults)], started)
    except (RagError, KeyboardInterrupt):
        pass  # a second Ctrl-C, or no database: the line below still says what happened
    info(f"error: {INTERRUPTED_ERROR}")
    raise typer.Exit(INTERRUPTED)


def _wait_for_read_replica(settings: Settings) -> None:
    """Read your index run (docs/scaling.md): with a read replica, return only once it has replayed
    this run, or warn after db.replica_wait_s. The run succeeded either way."""
    if not settings.read_database_url:
        return
    from rag.errors import RagError
    from rag.store.locate import resolve_database_url
    from rag.store.replica import lag_warning, wait_after_writes

    try:
        waited = wait_after_writes(settings, resolve_database_url(settings))
    except RagError as exc:
        info(f"warning: {exc}")
        return
    if waited is not None and not waited.caught_up:
        info(f"warning: {lag_warning(waited)}")


def _emit(report: IndexReport, json_out: bool, summary: bool = True) -> None:
    """Warnings and skips to stderr (always), then the summary to stdout (unless `summary` is False)."""
    _warn(report)
    if not summary:
        return
    if json_out:
        print_json(report.to_dict())
        return
    for v in report.vaults:
        if v.error is None:
            say(f"{v.vault}: {v.files_seen} files seen, {v.files_indexed} indexed, "
                       f"{v.files_unchanged} unchanged, {len(v.skipped)} skipped, {v.files_removed} removed" +
                       (f", {v.files_failed_closed} stored as restricted (unusable confidentiality)"
                        if v.files_failed_closed else "") + "; " +
                       f"{v.chunks_written} chunks written" +
                       (f", {v.chunks_reembedded} re-embedded" if v.chunks_reembedded else "") +
                       f" in {v.seconds:.2f} s ({report.embedding_model}; lexical backend {v.lexical_backend})")
    if not report.vaults:
        say("No vaults to index. Add one with: ragpg vault add NAME PATH")
    else:
        say(f"Peak memory of this run: {report.peak_rss_mb:.0f} MiB")


def _exit_on_failure(report: IndexReport) -> None:
    failed = report.failed
    for v in failed:
        info(f"error: vault '{v.vault}': {v.shown_error}")
    if failed:
        raise typer.Exit(failed[0].error_code or 1)


def index(
    ctx: typer.Context,
    vaults: list[str] = typer.Argument(None, help="Vaults to index (default: all)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    allow_empty: bool = typer.Option(False, "--allow-empty", help=ALLOW_EMPTY_HELP),
) -> None:
    """Index vaults incrementally: only new and changed files are parsed and embedded."""
    _run(state(ctx).settings, list(vaults) if vaults else None, quiet, json_out, allow_empty)


def reindex(
    ctx: typer.Context,
    quiet: bool = typer.Option(False, "--quiet", "-q", help=REINDEX_QUIET_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    allow_empty: bool = typer.Option(False, "--allow-empty", help=ALLOW_EMPTY_HELP),
) -> None:
    """Bring every vault up to date (for cron). Idempotent and resumable; exit 0 unless a vault failed."""
    _run(state(ctx).settings, None, quiet, json_out, allow_empty, quiet_summary=quiet and not json_out)


def watch(
    ctx: typer.Context,
    vaults: list[str] = typer.Argument(None, help="Vaults to watch (default: all)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON summary line per re-index."),
) -> None:
    """Index, then re-index a vault whenever its files are saved, created, deleted or renamed (Ctrl-C stops)."""
    from rag.ingest.watch import watch_vaults

    settings = state(ctx).settings
    bars = RichProgress(quiet)

    def on_report(report: IndexReport) -> None:
        bars.finish()  # the run's bars go before its summary is printed
        if json_out:
            sys.stdout.write(json_for_terminal(json.dumps(report.to_dict(), default=str, ensure_ascii=False)) + "\n")
            sys.stdout.flush()
            _warn(report)
        else:
            _emit(report, False)
            sys.stdout.flush()
        for v in report.failed:
            info(f"error: vault '{v.vault}': {v.shown_error}")

    if not quiet:
        info(f"Watching (debounce {settings.ingest.watch_debounce_ms} ms); Ctrl-C to stop.")
    try:
        with bars:
            watch_vaults(settings, list(vaults) if vaults else None, on_report=on_report, progress=bars)
    except KeyboardInterrupt:
        from ragpg_cli.exit_codes import INTERRUPTED

        info("stopped watching (Ctrl-C)")
        raise typer.Exit(INTERRUPTED) from None


def _warn(report: IndexReport) -> None:
    for v in report.vaults:
        for skip in v.skipped:
            info(f"warning: {v.vault}: {skip.message}")
        for warning in v.shown_warnings:
            info(f"warning: {v.vault}: {warning}")
