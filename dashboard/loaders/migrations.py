"""The Migrations page's data: before/after per event and lineage, the category mix and how
much of it is known, a successor's first runs, changepoints and the coverage lost."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from analytics import before_after as ba
from analytics import changepoints as cp
from analytics import (
    config_tables,
    coverage,
    successors,
)
from analytics.config_tables import config_lineages
from dashboard.filters import Filters
from dashboard.loaders import shared
from store import page_queries

# What before/after and the category mix read of a logical run, and coverage of a logical job:
# merging only these keeps every other (string) column out of the window joins.
WINDOW_RUN_COLUMNS = [
    "run_id",
    "lineage",
    "created_at",
    "logical_outcome",
    "failure_category",
    "failure_basis",
    "event",
    "head_branch",
]


COVERAGE_JOB_COLUMNS = [
    "run_id",
    "lineage",
    "workflow_path",
    "logical_job",
    "logical_outcome",
    "created_at",
    "html_url",
]


# A lost job, its workflow, its runs in the window before, its last run and "no successor".
COVERAGE_LOST_COLUMNS = [c for c in coverage.LOST_COLUMNS if c != "event_date"]


# What a successor's first-runs strip reads of a run (event and branch: for the scope).
STRIP_RUN_COLUMNS = [
    "run_id",
    "workflow_path",
    "created_at",
    "logical_outcome",
    "failure_category",
    "html_url",
    "event",
    "head_branch",
]


@st.cache_data(ttl=shared.TTL)
def before_after(db_url: str, filters: Filters) -> pd.DataFrame:
    chosen, where = shared.project(filters.repo), shared.sql_filter(filters)
    return ba.before_after(
        shared.all_runs(db_url, where)[WINDOW_RUN_COLUMNS],
        shared.events(db_url, filters.repo),
        chosen.analysis,
        scope=filters.scope,
        default_branch=chosen.default_branch,
        lineages=config_lineages(chosen.workflows),
        members=shared.incident_members(db_url, where),
    )


@st.cache_data(ttl=shared.TTL)
def event_sentences(db_url: str, filters: Filters) -> dict[pd.Timestamp, str]:
    """Each event's one-sentence answer (analytics.before_after.headline), by event date, from
    the lineages with a run on either side; cached with the table, so a page view only reads
    them."""
    analysis = shared.project(filters.repo).analysis
    table = before_after(db_url, filters)
    counted = table[table["before_runs"] + table["after_runs"] > 0]
    incidents = shared.incident_table(db_url, filters.repo)
    return {
        date: ba.headline(counted[counted["event_date"] == date], analysis, incidents)
        for date in table["event_date"].unique()
    }


def _window_mix_args(db_url: str, filters: Filters) -> dict[str, Any]:
    """What category_shift and basis_mix read: the windowed runs and the same settings."""
    chosen = shared.project(filters.repo)
    return {
        "runs": shared.all_runs(db_url, shared.sql_filter(filters))[WINDOW_RUN_COLUMNS],
        "events": shared.events(db_url, filters.repo),
        "analysis": chosen.analysis,
        "scope": filters.scope,
        "default_branch": chosen.default_branch,
        "lineages": config_lineages(chosen.workflows),
    }


@st.cache_data(ttl=shared.TTL)
def category_shift(db_url: str, filters: Filters) -> pd.DataFrame:
    return ba.category_shift(**_window_mix_args(db_url, filters))


@st.cache_data(ttl=shared.TTL)
def before_after_known(db_url: str, filters: Filters) -> pd.DataFrame:
    """The before/after table with how much of each side's category mix is known, for every
    event (the page's windows are the events', whatever the date range): the rows
    ``ciflake export before-after`` writes with no --since/--until, by the same names."""
    known = ba.basis_mix(**_window_mix_args(db_url, filters))
    return ba.as_exported(before_after(db_url, filters), known)


@st.cache_data(ttl=shared.TTL)
def basis_mix(db_url: str, filters: Filters) -> pd.DataFrame:
    """How much of each event's red-run category mix is known, per side (ba.basis_mix)."""
    return ba.basis_mix(**_window_mix_args(db_url, filters), per_lineage=False)


@st.cache_data(ttl=shared.TTL)
def successor_first_runs(db_url: str, filters: Filters) -> pd.DataFrame:
    """The first runs of the workflows each event created (analytics.successors), over
    every date: a workflow's first run in the range is not its first run."""
    analysis = shared.project(filters.repo).analysis
    frame = shared.all_runs(db_url, shared.sql_filter(filters))[STRIP_RUN_COLUMNS]
    return successors.successor_first_runs(
        frame, shared.events(db_url, filters.repo), analysis.first_runs, analysis.window_days
    )


@st.cache_data(ttl=shared.TTL)
def changepoints(db_url: str, filters: Filters) -> pd.DataFrame:
    """The dates where a lineage's red rate shifted in the range (analytics.changepoints),
    each with what changed in its job set that day and the nearest change event that touches
    its lineage. Job set changes are read over every date: the first run of a workflow in the
    range is not its first run."""
    found = cp.lineage_changepoints(
        shared.runs(db_url, filters),
        shared.runs(db_url, filters, dated=False),
        page_queries.daily_job_presence(shared.engine(db_url), shared.sql_filter(filters)),
    )
    return cp.nearest_events(found, shared.events(db_url, filters.repo))


@st.cache_data(ttl=shared.TTL)
def coverage_lost(db_url: str, filters: Filters) -> pd.DataFrame:
    """Logical jobs that ran in the window before an event (of any kind) and have no
    successor after it (analytics.coverage)."""
    chosen, table = shared.project(filters.repo), shared.events(db_url, filters.repo)
    diff = coverage.coverage_diff(
        shared.jobs(db_url, filters, dated=False)[COVERAGE_JOB_COLUMNS],
        table,
        config_tables.job_renames(chosen.lineages),
        window_days=chosen.analysis.window_days,
        kinds=tuple(table["event_kind"].unique()),
    )
    return coverage.lost_jobs(diff)[COVERAGE_LOST_COLUMNS]
