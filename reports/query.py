"""What a report is asked for, from the dashboard's sidebar or from ``ciflake export``'s
options, and the one place it becomes a SQL filter for a repository's ``Project``: the scope
is part of it, so no page, table or command can leave it out."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from analytics.outcomes import scope_terms
from store.project import Project
from store.runfilter import RunFilter
from store.settings import ConfigError


@dataclass(frozen=True)
class Query:
    """Runs created in [since, until) (None: open), of the workflows ``paths`` (empty: every
    one), in ``scope`` (default-branch runs, pull-request runs, or both); ``category``: only
    the failures of that category, for the tables that have one; ``period``: "D" or "W", the
    period of the tables counted per day or week (the stability timeline, the categories);
    ``logical_job``: only the rows of that logical job, for the tables that have one (the
    Flaky jobs page's verdicts of the job chosen: reports.tables.build). The nightly
    summary's tables (reports.night_tables) also read ``event_date``: the change event of that
    moment they compare around (None: no event, the runs since ``since``), and ``as_of``: the
    moment they are reported at (NEW's end; None: the clock)."""

    since: datetime | None = None
    until: datetime | None = None
    paths: tuple[str, ...] = ()
    scope: str = "default"
    category: str | None = None
    period: str = "W"
    logical_job: str | None = None
    event_date: datetime | None = None
    as_of: datetime | None = None

    def where(self, project: Project, *, dated: bool = True) -> RunFilter:
        """The SQL filter of ``project``'s repository: ``dated`` False drops the dates (a
        workflow's first run, an event's windows: read over every date)."""
        events, branch = scope_terms(self.scope, project.default_branch)
        return RunFilter(
            repo=project.repo,
            since=self.since if dated else None,
            until=self.until if dated else None,
            paths=self.paths,
            events=events,
            branch=branch,
        )

    def describe(self) -> str:
        """The filters in words, for the line that explains an empty table."""
        runs = " or ".join(self.paths) if self.paths else "any workflow"
        words = [f"{self.scope}-scope runs of {runs}"]
        words += [f"from {self.since:%Y-%m-%d %H:%M}"] if self.since else []
        words += [f"before {self.until:%Y-%m-%d %H:%M}"] if self.until else []
        words += [f"category {self.category}"] if self.category else []
        words += [f"logical job {self.logical_job}"] if self.logical_job else []
        return ", ".join(words)


def workflow_paths(project: Project, given: Iterable[str]) -> tuple[str, ...]:
    """``--workflow`` values as configured paths: a configured path, or a bare file name
    (``e2e_ascend.yml``) that exactly one configured path ends with. Anything else is a
    ConfigError naming the nearest configured paths: a mistyped workflow would otherwise
    match nothing and pass for a workflow without runs."""
    configured = [w.path for w in project.workflows]
    by_name: dict[str, list[str]] = {}
    for path in configured:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    paths = []
    for value in given:
        found = [value] if value in configured else by_name.get(value, [])
        if len(found) == 1:
            paths.append(found[0])
            continue
        if found:
            raise ConfigError(
                f"--workflow {value!r} names {len(found)} workflows of {project.repo}: "
                f"give the path, one of {', '.join(found)}"
            )
        near = difflib.get_close_matches(value, configured, n=3, cutoff=0.6)
        near += [
            path
            for name in difflib.get_close_matches(value, by_name, n=3, cutoff=0.6)
            for path in by_name[name]
            if path not in near
        ]
        hint = (
            f"; did you mean {' or '.join(near)}?" if near else "; ciflake config show lists them"
        )
        raise ConfigError(
            f"--workflow {value!r} is not a configured workflow of {project.repo}{hint}"
        )
    return tuple(paths)
