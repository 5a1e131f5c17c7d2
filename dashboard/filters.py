"""The sidebar filters every page shares, kept in ``st.session_state`` across pages."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import streamlit as st

from store.queries import RunFilter

TAGS = ("fully_async", "one_step_off_policy", "separate_async", "opd", "ascend")
SCOPES = {"default": "Default branch", "pr": "Pull requests", "all": "Both"}


@dataclass(frozen=True)
class Filters:
    """What the user selected: hashable, so cached loaders can key on it."""

    repo: str
    first_day: date
    last_day: date
    tags: tuple[str, ...]
    scope: str

    def run_filter(self, paths: tuple[str, ...], *, dated: bool = True) -> RunFilter:
        """The SQL filter: ``paths`` are the workflows carrying the selected tags."""
        if not dated:
            return RunFilter(repo=self.repo, paths=paths)
        since = datetime.combine(self.first_day, time(), UTC)
        until = datetime.combine(self.last_day + timedelta(days=1), time(), UTC)
        return RunFilter(repo=self.repo, since=since, until=until, paths=paths)


def sidebar_filters(repos: list[str], default_repo: str, span: tuple[date, date]) -> Filters:
    """Render the filters; widget keys keep each choice when the user switches pages."""
    sidebar = st.sidebar
    options = repos if default_repo in repos else [default_repo, *repos]
    repo = sidebar.selectbox("Repository", options, index=options.index(default_repo), key="repo")
    first, last = span
    chosen = sidebar.date_input(
        "Date range", value=(first, last), min_value=first, max_value=last, key="dates"
    )
    first_day, last_day = (chosen[0], chosen[-1]) if chosen else span
    tags = sidebar.multiselect("Tags (any of)", TAGS, key="tags")
    scope = sidebar.radio(
        "Scope", list(SCOPES), format_func=SCOPES.__getitem__, key="scope", horizontal=True
    )
    return Filters(repo, first_day, last_day, tuple(tags), scope)
