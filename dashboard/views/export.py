"""Export: every table the dashboard shows, as CSV for retrospectives."""

from functools import partial

import streamlit as st

from analytics.spreadsheet import csv_bytes
from dashboard.context import current_view
from dashboard.loaders import failures, flaky_jobs, migrations, runners, shared

view = current_view()
url, filters = view.db_url, view.filters
TABLES = {
    "runs": lambda: shared.runs(url, filters),
    "before-after": lambda: migrations.before_after_known(url, filters),
    "signatures": lambda: failures.signatures(url, filters),
    "flaky-jobs": lambda: flaky_jobs.flaky_jobs(url, filters),
    "verdicts": lambda: flaky_jobs.job_verdicts(url, filters),
    "runner-pools": lambda: runners.runner_rates(url, filters, "runner_pool"),
    "coverage-lost": lambda: migrations.coverage_lost(url, filters),
    "changepoints": lambda: migrations.changepoints(url, filters),
}

st.title("Export")
st.caption("CSV of each table for the current filters; times in ISO-8601 UTC, rates in [0, 1].")
for name, load in TABLES.items():
    table = load()
    st.download_button(
        f"{name}.csv ({len(table)} rows)",
        data=partial(csv_bytes, table),  # written when clicked, not on every page load
        on_click="ignore",
        file_name=f"{filters.repo.replace('/', '_')}-{name}.csv",
        mime="text/csv",
        key=f"export-{name}",
    )
