"""The Overview page's data: status tiles, the stability timeline, the job x day grid."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics import once, rates, recent, silence
from dashboard import shaping
from dashboard.filters import Filters
from dashboard.loaders import shared
from store import incidents, page_queries


@st.cache_data(ttl=shared.TTL)
def tiles(db_url: str, filters: Filters) -> pd.DataFrame:
    """Status tiles per lineage and per workflow (analytics.recent.tile_tables: the last
    ``[dashboard] recent_days`` before the repository's newest run, RETIRED, SILENT, STALE;
    the window's success rate as it is and counted once)."""
    frame = shared.runs(db_url, filters)
    engine = shared.engine(db_url)
    _, newest = page_queries.run_span(engine, filters.repo)
    reference = min(pd.Timestamp(newest), pd.Timestamp(filters.window()[1])) if newest else None
    events = shared.events(db_url, filters.repo)
    project = shared.project(filters.repo)
    recent_days = shared.current_config().dashboard_recent_days
    quiet = silence.silent_workflows(engine, project)
    members = shared.incident_members(db_url, shared.sql_filter(filters))
    return recent.tile_tables(
        frame,
        reference,
        events,
        project.analysis,
        recent_days=recent_days,
        silent=quiet,
        members=members,
    )


@st.cache_data(ttl=shared.TTL)
def timeline(db_url: str, filters: Filters, freq: str) -> pd.DataFrame:
    """Success rate with its Wilson interval per lineage and day or week, as it is and with
    each incident's red runs of a lineage and period counted once (analytics.once)."""
    frame = shared.runs(db_url, filters)
    min_runs = shared.project(filters.repo).analysis.min_runs
    periods = frame.assign(period=pd.NaT) if frame.empty else rates.with_period(frame, freq)
    members = shared.incident_members(db_url, shared.sql_filter(filters))
    incident = once.run_incidents(periods, members)
    return once.stability_once(periods, incident, ["lineage", "period"], min_runs)


@st.cache_data(ttl=shared.TTL)
def heatmap(db_url: str, filters: Filters, workflow_path: str, days: int) -> pd.DataFrame:
    """Cells of the job x day grid of one workflow, the last ``days`` days of the range. Only
    that workflow's jobs are loaded: the overview needs no other job."""
    frame = shared.workflow_jobs(db_url, shared.sql_filter(filters), workflow_path)
    return shaping.job_day_cells(shared.in_range(frame, filters), days)


@st.cache_data(ttl=shared.TTL)
def incident_bands(db_url: str, filters: Filters) -> pd.DataFrame:
    """The incidents of the range and scope, a row per lineage they hit
    (dashboard.shaping.incident_bands)."""
    members = incidents.load_members(shared.engine(db_url), shared.sql_filter(filters, dated=True))
    hit = shared.table(db_url, filters, "incidents").rename(columns={"incident_id": "id"})
    return shaping.incident_bands(hit, members, shared.runs(db_url, filters))
