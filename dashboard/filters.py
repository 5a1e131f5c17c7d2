"""The sidebar filters every page shares, kept in ``st.session_state`` across pages."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import streamlit as st

from reports.query import Query

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

    def query(self, paths: tuple[str, ...]) -> Query:
        """The selection as a report query: ``paths`` are the workflows carrying the selected
        tags. Its SQL filter needs the repository's Project (``Query.where``), so no page can
        leave the scope or the default branch out: loaders.shared.sql_filter."""
        since, until = self.window()
        return Query(since, until, paths, self.scope)


def sidebar_filters(
    repos: list[str], default_repo: str, span: tuple[date, date], tags: tuple[str, ...]
) -> Filters:
    """Render the filters; widget keys keep each choice when the user switches pages. ``span``
    and ``tags``: those of the repository selected (its runs' days, its workflows' tags), so
    the date range and the tags are separate per repository: switching to another one never
    carries a date or a tag it does not have."""
    sidebar = st.sidebar
    options = repos if default_repo in repos else [default_repo, *repos]
    repo = sidebar.selectbox("Repository", options, index=options.index(default_repo), key="repo")
    first, last = span
    chosen = sidebar.date_input(
        "Date range", value=(first, last), min_value=first, max_value=last, key=f"dates-{repo}"
    )
    first_day, last_day = (chosen[0], chosen[-1]) if chosen else span
    tags = sidebar.multiselect("Tags (any of)", tags, key=f"tags-{repo}")
    scope = sidebar.radio(
        "Scope", list(SCOPES), format_func=SCOPES.__getitem__, key="scope", horizontal=True
    )
    return Filters(repo, first_day, last_day, tuple(tags), scope)


def period(key: str) -> str:
    """A chart's period, "D" (daily) or "W" (weekly, the default), chosen on its section
    (``key``: the control's, one per page) and kept while the page is open."""
    chosen = st.segmented_control(
        "Period",
        ["D", "W"],
        default="W",
        format_func={"D": "daily", "W": "weekly"}.get,
        key=key,
        persist_state="page",
    )
    return chosen or "W"
