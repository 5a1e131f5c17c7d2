"""The dashboard's entrypoint: page config, the shared sidebar and status lines, the router.
Pages live in ``dashboard/views`` (not ``pages/``: next to the entrypoint, Streamlit would also
serve that folder as old-style pages that skip this router); they read the view shared here."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.context import View, render_status, share_view, untracked_line
from dashboard.filters import sidebar_filters
from dashboard.loaders import shared
from store.settings import ConfigError

PAGES = Path(__file__).parent / "views"

st.set_page_config(
    page_title="ciflake: CI flakiness", page_icon=":material/bug_report:", layout="wide"
)
try:
    config = shared.current_config()
except ConfigError as exc:  # a config or database URL edited since `ciflake dashboard` checked
    st.error(f"Configuration: {exc}")
    st.stop()
problem = shared.database_problem(config.database_url)
if problem is not None:
    st.error(problem)
    st.stop()

repos = shared.repositories(config.database_url)
default_repo = next((r for r in config.repos if r in repos), repos[0])
repo = st.session_state.get("repo", default_repo)
span = shared.day_span(config.database_url, repo)
filters = sidebar_filters(repos, default_repo, span, shared.project(repo).tags)
if (untracked := untracked_line(repos, config.repos, config.source)) is not None:
    st.sidebar.warning(untracked, icon=":material/folder_off:")
view = View(config.database_url, filters)
share_view(view)
pages = [
    st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page(PAGES / "migrations.py", title="Migrations", icon=":material/compare_arrows:"),
    st.Page(PAGES / "failures.py", title="Failures", icon=":material/error:"),
    st.Page(PAGES / "flaky_jobs.py", title="Flaky jobs", icon=":material/shuffle:"),
    st.Page(PAGES / "runners.py", title="Runners and environments", icon=":material/dns:"),
    st.Page(PAGES / "export.py", title="Export", icon=":material/download:"),
]
router = st.navigation(pages)
render_status(view, config.interval_minutes)
router.run()
