"""Runners and environments: failure rate per runner pool and runner with "works elsewhere",
the runner incidents, and the environment versions (CANN, driver, torch...) found in failed
logs; each a section (dashboard.sections)."""

import streamlit as st

from analytics.rates import short_of_data
from dashboard import charts, figures, sections, tables
from dashboard.context import current_view
from dashboard.loaders import shared
from dashboard.shaping import CHARTED_RUNNERS, most_failed, runner_incidents
from store.vocabulary import HOSTED_RUNNERS, short_lived_runners

view = current_view()
COLUMNS = [
    "runs",
    "fail",
    "flaky",
    "fail_rate",
    "fail_rate_low",
    "fail_rate_high",
    "failed_jobs",
    "works_elsewhere",
    "incidents",
    "fail_once",
    "fail_rate_once",
]
COLUMN_CONFIG = {
    c: st.column_config.NumberColumn(format="percent")
    for c in ("fail_rate", "fail_rate_low", "fail_rate_high", "works_elsewhere")
} | {
    "fail_once": st.column_config.NumberColumn("fail, counted once"),
    "fail_rate_once": st.column_config.NumberColumn("fail rate, counted once", format="percent"),
}

st.title("Runners and environments")
st.caption(
    "Fail rate = logical jobs whose latest attempt failed / counted logical jobs. Works "
    "elsewhere: share of those failures whose job went green (first attempt or rerun) on "
    "another pool or runner the same week (docs/vocabulary.md). Incidents: the runner "
    "incidents of the range on that runner or on a label of that pool, listed under Runner "
    "incidents. Counted once: each incident's failed jobs on a pool or runner are one failed job."
)


def _rates(by: str, name: str) -> None:
    """The fail rate of each runner pool (``by`` "runner_pool") or runner ("runner_name"): a
    chart of the most failed and the table of all; ``name``: its registry table."""
    table = shared.table(view.db_url, view.filters, name)
    min_runs = shared.project(view.filters.repo).analysis.min_runs
    short = short_of_data(table, min_runs)
    if short is not None:
        st.warning(short)
    charted, limit, shown = table, 25, [by, *COLUMNS]
    if by == "runner_name":
        st.caption(
            f"One row per host one can rate (at least {min_runs} counted jobs in the range, or "
            f"a runner incident). GitHub's hosted runners are one row together, {HOSTED_RUNNERS}:"
            " each of their VMs runs one job and is gone; per pool, the hosts that ran fewer "
            f"(short-lived, one container per job) are one row, {short_lived_runners('<pool>')}. "
            "runners: the hosts behind a row. The chart: the "
            f"{CHARTED_RUNNERS} rows with the most hard failures, of {len(table)}; the "
            "table holds every one."
        )
        charted, limit, shown = most_failed(table), CHARTED_RUNNERS, [by, "runners", *COLUMNS]
    if len(charted):
        bars = figures.drawn(charts.rate_bars, charted, by, "fail_rate", limit)
        st.plotly_chart(bars, key=f"bars-{by}")
    tables.show(
        table[shown],
        f"runner-rates-{by}",
        missing="No job ran in the range and scope: no runner to rate.",
        hide_index=True,
        column_config=COLUMN_CONFIG,
    )


def _incidents() -> None:
    """The incidents found on one runner: a host or a label."""
    st.caption(
        "Incidents found on one runner (docs/vocabulary.md): a host, or a runner label, failing "
        "the jobs sent to it with one category in a short time. Its failures are one event, not "
        "one per job."
    )
    tables.show(
        runner_incidents(shared.table(view.db_url, view.filters, "incidents")),
        "runner-incidents",
        missing=(
            "No runner incident in the range and scope: no host or label failed its jobs at once."
        ),
        hide_index=True,
        column_config={
            "runner": st.column_config.TextColumn("runner (host or label)"),
            "started_at": st.column_config.DatetimeColumn("start", format="YYYY-MM-DD HH:mm"),
            "ended_at": st.column_config.DatetimeColumn("end", format="YYYY-MM-DD HH:mm"),
            "label": st.column_config.TextColumn("cause", width="large"),
        },
    )


def _environments() -> None:
    """The environment versions printed in the logs of failed jobs."""
    st.caption(
        "Hard-failed logical jobs per version printed in their logs: read from failed jobs' logs "
        "only, so these are failure counts, not rates; works elsewhere by runner."
    )
    tables.show(
        shared.table(view.db_url, view.filters, "environments"),
        "environments",
        missing="No version found in the logs of the failed jobs of the range (none failed, or "
        "their logs print none or were not archived).",
        hide_index=True,
    )


sections.show(
    "runners",
    {
        "Runner pools": lambda: _rates("runner_pool", "runner-pools"),
        "Runners": lambda: _rates("runner_name", "runners"),
        "Runner incidents": _incidents,
        "Environment versions": _environments,
    },
)
