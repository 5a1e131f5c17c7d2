"""What a report is asked for, from the dashboard's sidebar or from ``ciflake export``'s
options, and the one place it becomes a SQL filter for a repository's ``Project``: the scope
is part of it, so no page, table or command can leave it out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from analytics.outcomes import scope_terms
from store.project import Project
from store.runfilter import RunFilter


@dataclass(frozen=True)
class Query:
    """Runs created in [since, until) (None: open), of the workflows ``paths`` (empty: every
    one), in ``scope`` (default-branch runs, pull-request runs, or both); ``category``: only
    the failures of that category, for the tables that have one."""

    since: datetime | None = None
    until: datetime | None = None
    paths: tuple[str, ...] = ()
    scope: str = "default"
    category: str | None = None

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
