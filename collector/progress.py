"""Progress of a long collect (runs, jobs, logs, the request budget, ETA) on the terminal;
silent in quiet mode."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class CollectProgress:
    def __init__(self, enabled: bool = True, console: Console | None = None) -> None:
        self.enabled = enabled
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description:<5}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
            transient=True,
        )
        self._runs = self._progress.add_task("runs", total=0)
        self._jobs = self._progress.add_task("jobs", total=0)
        self._logs = self._progress.add_task("logs", total=0)
        self._budget: Any = None  # the "requests" bar, shown when the collect has a budget

    def __enter__(self) -> CollectProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.stop()

    def note(self, message: str) -> None:
        """A line above the bars (rate-limit waits and the like), shown even when quiet."""
        self.console.print(message, highlight=False, markup=False)

    def _grow(self, task: Any, count: int) -> None:
        total = self._progress.tasks[task].total or 0
        self._progress.update(task, total=total + count)

    def add_runs(self, count: int) -> None:
        self._grow(self._runs, count)

    def advance_runs(self) -> None:
        self._progress.advance(self._runs)

    def add_jobs(self, count: int) -> None:
        self._grow(self._jobs, count)
        self._progress.advance(self._jobs, count)

    def add_logs(self, count: int) -> None:
        self._grow(self._logs, count)

    def advance_logs(self) -> None:
        self._progress.advance(self._logs)

    def spent(self, requests: int, budget: int | None) -> None:
        """Requests counted so far against the collect's budget (`--max-requests`)."""
        if budget is None:
            return
        if self._budget is None:
            self._budget = self._progress.add_task("requests", total=budget)
        self._progress.update(self._budget, completed=min(requests, budget))

    @property
    def budget_shown(self) -> tuple[float, float | None] | None:
        """(spent, budget) as the bar shows them; None without a budget."""
        if self._budget is None:
            return None
        task = self._progress.tasks[self._budget]
        return task.completed, task.total
