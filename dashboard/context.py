"""What the router hands every page: the database URL and the sidebar filters, kept in
``st.session_state``, and the lines every page shows above its content."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import streamlit as st

from dashboard.filters import Filters
from dashboard.loaders import shared
from reports.freshness import collected
from store.bookkeeping import LastCollect

VIEW_KEY = "view"


@dataclass(frozen=True)
class View:
    db_url: str
    filters: Filters


def share_view(view: View) -> None:
    st.session_state[VIEW_KEY] = view


def current_view() -> View:
    return st.session_state[VIEW_KEY]


def freshness_line(
    last: LastCollect | None, interval_minutes: int, now: datetime
) -> tuple[bool, str]:
    """(stale, text): the data is stale when the last collect that reached GitHub is older
    than two collect intervals, or when there never was one."""
    text = collected(last, now)
    text = text[0].upper() + text[1:]
    if last is None:
        return True, f"{text}: run `ciflake collect`."
    stale = now - last.at > timedelta(minutes=2 * interval_minutes)
    return stale, text + (
        f", older than two collect intervals ({interval_minutes} min)" * stale
    ) + "."


def untracked_line(held: list[str], tracked: tuple[str, ...], source: str) -> str | None:
    """What to do when the database holds repositories the config does not track: their
    pages would lack their workflows, lineages and events. None when it tracks them all."""
    untracked = [repo for repo in held if repo not in tracked]
    if not untracked:
        return None
    return (
        f"This database also holds {', '.join(untracked)}, which this configuration ({source}) "
        "does not track: its lineages, tags and events are missing here. Start the dashboard "
        "with the ciflake.toml that collected it (`ciflake --config FILE dashboard`)."
    )


def render_status(view: View, interval_minutes: int) -> None:
    """The simulated-data banner, the freshness line and the backfill's progress over the
    date range and after it, on every page."""
    repo = view.filters.repo
    if shared.is_simulated(view.db_url, repo):
        st.info(
            f"Simulated data: these runs come from fakehub's replica of {repo}'s CI history, "
            "not from GitHub.",
            icon=":material/science:",
        )
    stale, text = freshness_line(
        shared.last_collect(view.db_url, repo), interval_minutes, datetime.now(UTC)
    )
    if stale:
        st.warning(text, icon=":material/schedule:")
    else:
        st.caption(text)
    missing = shared.missing(view.db_url, repo, view.filters.window()[0], None)
    if missing is not None:
        st.warning(f"{missing[0].upper()}{missing[1:]}.", icon=":material/hourglass_top:")
