"""The Flaky jobs page's data: jobs ranked by flake rate, verdicts, repair time and cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics import (
    health,
    once,
    verdicts,
)
from dashboard.filters import Filters
from dashboard.loaders import shared
from store import frame_queries


@st.cache_data(ttl=shared.TTL)
def flaky_jobs(db_url: str, filters: Filters) -> pd.DataFrame:
    """Logical jobs ranked by the Wilson lower bound of their flake rate, with their rates
    counted once beside."""
    frame = shared.jobs(db_url, filters)
    members = shared.incident_members(db_url, shared.sql_filter(filters))
    return once.flaky_table(frame, shared.project(filters.repo).analysis.min_runs, members)


@st.cache_data(ttl=shared.TTL)
def job_verdicts(db_url: str, filters: Filters) -> pd.DataFrame:
    """Every failed logical job with its verdict and evidence (analytics.verdicts), and its
    verdict with incidents counted once (analytics.once.verdicts_once)."""
    frame, where = shared.jobs(db_url, filters), shared.sql_filter(filters)
    table = verdicts.job_verdicts(frame, shared.all_failures(db_url, where))
    return once.verdicts_once(table, shared.incident_members(db_url, where))


@st.cache_data(ttl=shared.TTL)
def repair_and_cost(db_url: str, filters: Filters, with_jobs: bool = False) -> pd.DataFrame:
    """Per workflow in the range: time to repair (MTTR), from the runs in scope; ``with_jobs``:
    also the retry tax (accelerator-hours spent on reruns) and job duration and queue
    percentiles, which read every stored job of their attempts (analytics.health
    .health_table): the page asks for those only when the reader does."""
    frame = shared.runs(db_url, filters)
    attempts = (
        frame_queries.job_times(shared.engine(db_url), shared.sql_filter(filters, dated=True))
        if with_jobs
        else None
    )
    return health.health_table(frame, attempts, ["workflow_path"])
