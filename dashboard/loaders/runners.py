"""The Runners page's data: stability per runner or pool with "works elsewhere", and failures
per environment fact."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics import elsewhere, environments
from dashboard.filters import Filters
from dashboard.loaders import shared
from dashboard.shaping import incidents_per_place
from store import frame_queries


# Shared by the runner tables as resources (not copied on each hit; do not modify them): the
# jobs with their pool, and the hard failures flagged "works elsewhere" per place.
@st.cache_resource(ttl=shared.TTL)
def _placed_jobs(db_url: str, filters: Filters) -> pd.DataFrame:
    return elsewhere.with_runner_pool(shared.jobs(db_url, filters))


@st.cache_resource(ttl=shared.TTL)
def _flagged(db_url: str, filters: Filters, where: str) -> pd.DataFrame:
    """By runner_pool from the jobs with their pool; by runner_name from the jobs as stored,
    as the summary's environment table reads them (a job that never ran has no runner:
    analytics.elsewhere counts it as one place, named or not, so the runner table only names
    it)."""
    if where == "runner_name":
        return elsewhere.failed_elsewhere(shared.jobs(db_url, filters), where)
    return elsewhere.failed_elsewhere(_placed_jobs(db_url, filters), where)


@st.cache_data(ttl=shared.TTL)
def runner_rates(db_url: str, filters: Filters, by: str) -> pd.DataFrame:
    """Stability of logical jobs per runner pool or runner, with "works elsewhere", as it is
    and counted once (analytics.once), and the runner incidents of the range and scope on each
    (dashboard.shaping.incidents_per_place)."""
    min_runs = shared.project(filters.repo).analysis.min_runs
    flagged = _flagged(db_url, filters, by)
    members = shared.incident_members(db_url, shared.sql_filter(filters))
    placed = _placed_jobs(db_url, filters)
    table = elsewhere.runner_rates(placed, flagged, by, min_runs, members)
    hit = shared.table(db_url, filters, "incidents")
    return table.assign(incidents=incidents_per_place(table[by], hit))


@st.cache_data(ttl=shared.TTL)
def environment_failures(db_url: str, filters: Filters) -> pd.DataFrame:
    """Hard failures per environment fact (cann, driver, torch...) and version, with the
    runners and categories they hit (analytics.environments)."""
    failures = frame_queries.load_failures(
        shared.engine(db_url), shared.sql_filter(filters, dated=True), detail=("env",)
    )
    return environments.environment_failures(failures, _flagged(db_url, filters, "runner_name"))
