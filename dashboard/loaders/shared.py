"""What every page shares: the config and the selected repository's ``Project``, the read-only
engine, the database checks, the change events, and ``table``, the one way a page gets a report
table (reports.tables), cached on the filters and the database's data stamp.
Streamlit reruns a page on every click, so each loader is cached with a TTL (new collects show
up without a restart) and keyed on the database URL and the sidebar filters only."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import streamlit as st
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from analytics import config_tables
from dashboard.filters import Filters
from reports import freshness, tables
from reports.query import Query
from store import bookkeeping, derived, page_queries, runfilter
from store.engine import DatabaseURLError, MissingDatabaseError, database_error, make_engine
from store.events import all_events
from store.migrate import current_revision, head_revision
from store.project import Project
from store.settings import Config, load_config

TTL = "5m"


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@st.cache_resource
def config_for(config_path: str | None, db_url: str | None) -> Config:
    return load_config(config_path, db_url=db_url)


def current_config() -> Config:
    """The config as ``ciflake dashboard`` passed it: CIFLAKE_CONFIG and CIFLAKE_DB_URL."""
    return config_for(os.environ.get("CIFLAKE_CONFIG"), os.environ.get("CIFLAKE_DB_URL"))


def project(repo: str) -> Project:
    """The selected repository's workflows, lineages, events and analysis settings: those the
    config gives it, else none and the [analytics] defaults (a repository only collected)."""
    return current_config().project_for(repo)


@st.cache_resource
def engine(db_url: str) -> Engine:
    """A read-only engine: the dashboard never writes or migrates the collector's database."""
    return make_engine(db_url, read_only=True)


@st.cache_data(ttl="1m")
def database_problem(db_url: str) -> str | None:
    """Why the database cannot be shown yet, with the command that fixes it; None when fine."""
    try:
        revision = current_revision(engine(db_url))
    except MissingDatabaseError as exc:  # read-only SQLite: the file is missing
        return f"The database cannot be opened ({exc}). Run `ciflake collect --once` to create it."
    except (DatabaseURLError, SQLAlchemyError) as exc:  # a URL, a password, a server: no collect
        problem = str(exc) if isinstance(exc, DatabaseURLError) else database_error(db_url, exc)
        return (
            f"{problem[0].upper()}{problem[1:]}. Check the database URL (`--db`, "
            "`CIFLAKE_DB_URL` or `[database] url`) and the server."
        )
    if revision is None:
        return "The database is empty. Run `ciflake db upgrade`, then `ciflake collect --once`."
    if revision != head_revision():
        return (
            f"The database schema is at {revision}, this version needs {head_revision()}. "
            "Run `ciflake db upgrade`."
        )
    if not derived.repositories(engine(db_url)):
        return "No runs collected yet. Run `ciflake collect --once`."
    return None


@st.cache_data(ttl=TTL)
def repositories(db_url: str) -> list[str]:
    return derived.repositories(engine(db_url))


@st.cache_data(ttl=TTL)
def day_span(db_url: str, repo: str) -> tuple[date, date]:
    """The first and last day with runs: the default date range."""
    oldest, newest = page_queries.run_span(engine(db_url), repo)
    today = pd.Timestamp.now(tz="UTC").date()
    return (oldest or newest or pd.Timestamp(today)).date(), (newest or pd.Timestamp(today)).date()


@st.cache_data(ttl="1m")
def last_collect(db_url: str, repo: str) -> bookkeeping.LastCollect | None:
    return bookkeeping.last_collect(engine(db_url), repo)


@st.cache_data(ttl="1m")
def missing(db_url: str, repo: str, since: datetime, until: datetime | None) -> str | None:
    """What the store lacks of [since, until) (reports.freshness.missing), or None."""
    now = datetime.now(UTC)
    return freshness.missing(engine(db_url), project(repo), since, until, now)


@st.cache_data(ttl=TTL)
def is_simulated(db_url: str, repo: str) -> bool:
    """Runs whose web address is on a loopback host came from fakehub, not GitHub."""
    url = page_queries.latest_run_url(engine(db_url), repo)
    return url is not None and urlparse(url).hostname in LOOPBACK_HOSTS


def tagged_paths(chosen: Project, tags: tuple[str, ...]) -> tuple[str, ...]:
    """The workflow files carrying any of ``tags`` (no tags: every workflow, no filter)."""
    if not tags:
        return ()
    return tuple(w.path for w in chosen.workflows if set(w.tags) & set(tags)) or ("<none>",)


def sql_filter(filters: Filters) -> runfilter.RunFilter:
    """The SQL filter of the sidebar: repository, dates, tagged workflows and scope (for a
    drill-down's rows; a table comes from ``table``)."""
    return query(filters).where(project(filters.repo))


def query(filters: Filters) -> Query:
    """The sidebar's selection as a report query (reports.query): the dates, the workflows of
    the selected tags and the scope; ``ciflake export`` builds the same from its options."""
    return filters.query(tagged_paths(project(filters.repo), filters.tags))


@st.cache_data(ttl="10s", show_spinner=False)
def stamp(db_url: str, repo: str) -> str:
    """What the last collect (or triage, or event) left: store.bookkeeping.data_stamp."""
    return bookkeeping.data_stamp(engine(db_url), repo)


@st.cache_data(ttl="1h", max_entries=256, show_spinner=False)
def _built(db_url: str, repo: str, name: str, asked: Query, data: str) -> pd.DataFrame:
    """``data``: the stamp the result is keyed on, so a collect makes it stale at once."""
    return tables.build(engine(db_url), project(repo), name, asked)


def table(db_url: str, filters: Filters, name: str, **changes: Any) -> pd.DataFrame:
    """The report table ``name`` (reports.tables, the one path of every table a page shows)
    for the sidebar's filters, with the Query fields of ``changes`` set by the page (a workflow
    of its own as ``paths``, a ``period``, every date as ``since=None, until=None``). Cached
    on the filters and the database's last collect: moving between pages or back to a filter
    already seen reads it from the cache."""
    asked = replace(query(filters), **changes)
    return _built(db_url, filters.repo, name, asked, stamp(db_url, filters.repo))


def events(db_url: str, repo: str) -> pd.DataFrame:
    """Change events of ``repo``, the config's and the database's
    (analytics.config_tables.event_table)."""
    return config_tables.event_table(all_events(project(repo), engine(db_url)))
