"""The report tables: one registry of named tables, the one path by which the dashboard's pages,
``ciflake export`` and the nightly summary get every table they show. Each table has one name,
one set of keys and one header (docs/commands.md, "ciflake export"), and is built from a
repository's ``Project`` and a ``reports.query.Query`` (the dashboard's filters, or the
command's options), so the same table for the same filters is the same bytes wherever it is
asked for. The builders live by family (``run_tables``, ``failure_tables``, ``job_tables``,
``migration_tables``, ``overview_tables``, ``night_tables``: the nightly summary's); this
module gathers them.

Files are UTF-8 with a header; times are ISO-8601 UTC (``2026-06-03T07:51:40Z``); a text cell
that begins with ``=``, ``+``, ``-`` or ``@`` is prefixed with ``'`` so no spreadsheet runs it
(analytics.spreadsheet).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine

from reports import (
    failure_tables,
    job_tables,
    migration_tables,
    night_tables,
    overview_tables,
    run_tables,
)
from reports.query import Query
from reports.table_inputs import one_state
from reports.table_spec import ReportTable
from store.project import Project
from store.settings import ConfigError, parse_datetime
from store.vocabulary import CATEGORIES

# Grouped by what a row is: runs and jobs, failures, logical jobs, change events, the
# Overview's, the nightly summary's.
TABLES: dict[str, ReportTable] = {
    table.name: table
    for family in (
        run_tables,
        failure_tables,
        job_tables,
        migration_tables,
        overview_tables,
        night_tables,
    )
    for table in family.TABLES
}


def check_table(name: str, category: str | None = None) -> ReportTable:
    """The table ``name``; a ConfigError line for a table that does not exist, or a category
    it cannot filter on, before any database work."""
    if name not in TABLES:
        raise ConfigError(f"unknown report table {name!r} (choose from: {', '.join(TABLES)})")
    table = TABLES[name]
    if category is not None and category not in CATEGORIES:
        raise ConfigError(f"unknown category {category!r} (choose from: {', '.join(CATEGORIES)})")
    if category is not None and table.category_column is None:
        having = ", ".join(t.name for t in TABLES.values() if t.category_column)
        raise ConfigError(f"--category does not apply to {name!r} (only to: {having})")
    return table


def build(engine: Engine, project: Project, name: str, query: Query) -> pd.DataFrame:
    """The table ``name`` for ``project`` and ``query``: only the rows of ``query.category``
    and of ``query.logical_job`` when given (a builder may read only those already)."""
    table = check_table(name, query.category)
    if query.logical_job is not None and "logical_job" not in table.columns:
        raise ConfigError(f"{name!r} has no logical_job column to choose a logical job in")
    with one_state():
        frame = table.build(engine, project, query)[table.columns]
    if query.category is not None and table.category_column is not None:
        frame = frame[frame[table.category_column] == query.category]
    if query.logical_job is not None:
        frame = frame[frame["logical_job"] == query.logical_job]
    return frame.reset_index(drop=True)


def write_csv(data: bytes, path: str | Path) -> None:
    """Write a table's CSV bytes to ``path``; one ConfigError line when it cannot."""
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def parse_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """--since/--until as UTC datetimes; a range that ends before it starts is an error."""
    start = parse_datetime(since, "--since") if since else None
    end = parse_datetime(until, "--until") if until else None
    if start and end and end <= start:
        raise ConfigError(f"--until {until!r} is not after --since {since!r}")
    return start, end
