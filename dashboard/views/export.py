"""Export: every table the dashboard shows, as CSV for retrospectives."""

import streamlit as st

from analytics.spreadsheet import csv_bytes
from dashboard import loaders
from dashboard.context import current_view

view = current_view()
url, filters = view.db_url, view.filters
TABLES = {
    "runs": lambda: loaders.runs(url, filters),
    "before-after": lambda: loaders.before_after_known(url, filters),
    "signatures": lambda: loaders.signatures(url, filters),
    "flaky-jobs": lambda: loaders.flaky_jobs(url, filters),
    "verdicts": lambda: loaders.job_verdicts(url, filters),
    "runner-pools": lambda: loaders.runner_rates(url, filters, "runner_pool"),
    "coverage-lost": lambda: loaders.coverage_lost(url, filters),
    "changepoints": lambda: loaders.changepoints(url, filters),
}

st.title("Export")
st.caption("CSV of each table for the current filters; times in ISO-8601 UTC, rates in [0, 1].")
for name, load in TABLES.items():
    table = load()
    st.download_button(
        f"{name}.csv ({len(table)} rows)",
        data=csv_bytes(table),
        file_name=f"{filters.repo.replace('/', '_')}-{name}.csv",
        mime="text/csv",
        key=f"export-{name}",
    )
