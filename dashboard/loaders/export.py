"""The Export page's data: each report table (reports.tables) for the sidebar's filters, as the
CSV bytes ``ciflake export`` writes for the same filters."""

from __future__ import annotations

import streamlit as st

from analytics.spreadsheet import csv_bytes
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports import tables


@st.cache_data(ttl=shared.TTL, show_spinner=False)
def table_csv(db_url: str, filters: Filters, name: str) -> bytes:
    """Built when a download is clicked (the page itself reads nothing), then cached."""
    query = shared.query(filters)
    frame = tables.build(shared.engine(db_url), shared.project(filters.repo), name, query)
    return csv_bytes(frame)
