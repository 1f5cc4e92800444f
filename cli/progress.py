"""Progress-bar pieces shared by the CLI's long runs."""

from __future__ import annotations

from datetime import timedelta

from rich.console import Console, RenderableType
from rich.progress import ProgressColumn, Task
from rich.text import Text


class EtaColumn(ProgressColumn):
    """`ETA 0:01:23` for a task with a known total once rich has a speed estimate; blank otherwise
    (a task without a total, such as the chunks bar, has no end to estimate)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        remaining = task.time_remaining
        if remaining is None:
            return Text("ETA -:--:--", style="progress.remaining")
        return Text(f"ETA {timedelta(seconds=int(remaining))}", style="progress.remaining")


class RateColumn(ProgressColumn):
    """`12.5/s` for a counting task once rich has a speed estimate; blank otherwise."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        if speed is None or task.fields.get("phase"):
            return Text("")
        return Text(f"{speed:.1f}/s", style="progress.data.speed")


class CountsOnly(ProgressColumn):
    """A column drawn for counting tasks only: blank on a phase line (a task added with phase=True),
    which shows what the run does now and for how long."""

    def __init__(self, inner: ProgressColumn) -> None:
        super().__init__()
        self.inner = inner

    def render(self, task: Task) -> RenderableType:
        return Text("") if task.fields.get("phase") else self.inner.render(task)


class CountBar:
    """One bar on stderr for a run of known length (`eval` cases, `eval-beir` queries): done/total,
    elapsed time and an ETA; nothing when quiet or stderr is not a terminal."""

    def __init__(self, description: str, total: int | None, *, quiet: bool = False, console: Console | None = None) -> None:
        import sys

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        target = console or Console(stderr=True)
        self.enabled = not quiet and (console is not None or sys.stderr.isatty())
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), EtaColumn(), console=target, transient=console is None,
                                 disable=not self.enabled)
        self.task = self.progress.add_task(description, total=total)

    def __enter__(self) -> CountBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def advance(self, n: int = 1) -> None:
        self.progress.advance(self.task, n)

    def describe(self, description: str) -> None:
        self.progress.update(self.task, description=description)
