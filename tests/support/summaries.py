"""The nightly summary's data of a collected database, as ``ciflake summary`` reads it for the
built-in repository (tests of its content and of its size)."""

from __future__ import annotations

from datetime import datetime

from reports.summary import load_summary
from reports.summary_tables import SummaryData
from store.engine import make_engine
from store.events import all_events
from store.settings import load_config


def summary_data(db_url: str, since: datetime, now: datetime) -> SummaryData:
    project = load_config(env={}, db_url=db_url).project()
    engine = make_engine(db_url, read_only=True)
    try:
        return load_summary(
            engine, project, all_events(project, engine), pr=None, since=since, now=now
        )
    finally:
        engine.dispose()
