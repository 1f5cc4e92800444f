"""Progress-bar pieces shared by the CLI's long runs."""

from __future__ import annotations

from datetime import timedelta

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
