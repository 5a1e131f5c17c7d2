"""The Export page's data: each report table (reports.tables) for the sidebar's filters, as the
CSV bytes ``ciflake export`` writes for the same filters."""

from __future__ import annotations

import shlex
from datetime import timedelta
from pathlib import Path

import streamlit as st

from analytics.spreadsheet import csv_bytes
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports import tables
from store.engine import absolute_url, holds_password


@st.cache_data(ttl=shared.TTL, show_spinner=False)
def table_csv(db_url: str, filters: Filters, name: str) -> bytes:
    """Built when a download is clicked (the page itself reads nothing), then cached."""
    query = shared.query(filters)
    frame = tables.build(shared.engine(db_url), shared.project(filters.repo), name, query)
    return csv_bytes(frame)


def command(db_url: str, filters: Filters) -> str:
    """The ``ciflake export`` command that writes a table of the page (TABLE: its name) for
    the same filters, ready to paste: the dashboard's config file and database (a URL with a
    password stays off the page: the command then reads CIFLAKE_DB_URL or [database] url), the
    day after the range's last as --until, and a --workflow per workflow of the tags."""
    config = Path(shared.current_config().source)
    where = ["--config", str(config.resolve())] if config.is_file() else []
    where += [] if holds_password(db_url) else ["--db", absolute_url(db_url)]
    until = filters.last_day + timedelta(days=1)
    chosen = ["--repo", filters.repo, "--since", f"{filters.first_day:%Y-%m-%d}"]
    chosen += ["--until", f"{until:%Y-%m-%d}", "--scope", filters.scope]
    for path in shared.tagged_paths(shared.project(filters.repo), filters.tags):
        chosen += ["--workflow", path]
    return shlex.join(["ciflake", *where, "export", "TABLE", "--out", "TABLE.csv", *chosen])
