"""The sidebar filters every page shares, kept in ``st.session_state`` across pages."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

import streamlit as st

from analytics.outcomes import scope_terms
from store.runfilter import RunFilter

SCOPES = {"default": "Default branch", "pr": "Pull requests", "all": "Both"}


@dataclass(frozen=True)
class Filters:
    """What the user selected: hashable, so cached loaders can key on it."""

    repo: str
    first_day: date
    last_day: date
    tags: tuple[str, ...]
    scope: str

    def window(self) -> tuple[datetime, datetime]:
        """(since, until) of the date range: the first day's start, the day after the last."""
        since = datetime.combine(self.first_day, time(), UTC)
        return since, datetime.combine(self.last_day + timedelta(days=1), time(), UTC)

    def run_filter(
        self, paths: tuple[str, ...], default_branch: str, *, dated: bool = True
    ) -> RunFilter:
        """The SQL filter: ``paths`` are the workflows carrying the selected tags, and only the
        runs of the selected scope of a repository whose default branch is ``default_branch``
        (required, so that no page can leave the scope out: loaders.shared.sql_filter)."""
        events, branch = scope_terms(self.scope, default_branch)
        where = RunFilter(repo=self.repo, paths=paths, events=events, branch=branch)
        if not dated:
            return where
        since, until = self.window()
        return replace(where, since=since, until=until)


def sidebar_filters(
    repos: list[str], default_repo: str, span: tuple[date, date], tags: tuple[str, ...]
) -> Filters:
    """Render the filters; widget keys keep each choice when the user switches pages. ``tags``:
    those of the config's workflows (loaders.shared.config_tags)."""
    sidebar = st.sidebar
    options = repos if default_repo in repos else [default_repo, *repos]
    repo = sidebar.selectbox("Repository", options, index=options.index(default_repo), key="repo")
    first, last = span
    chosen = sidebar.date_input(
        "Date range", value=(first, last), min_value=first, max_value=last, key="dates"
    )
    first_day, last_day = (chosen[0], chosen[-1]) if chosen else span
    tags = sidebar.multiselect("Tags (any of)", tags, key="tags")
    scope = sidebar.radio(
        "Scope", list(SCOPES), format_func=SCOPES.__getitem__, key="scope", horizontal=True
    )
    return Filters(repo, first_day, last_day, tuple(tags), scope)
