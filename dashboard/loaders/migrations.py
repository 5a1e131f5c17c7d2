"""The changepoints the Overview page shows; the Migrations page's tables are report tables
(reports.migration_tables), read through loaders.shared.table."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics import changepoints as cp
from dashboard.filters import Filters
from dashboard.loaders import shared
from store import page_queries


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
