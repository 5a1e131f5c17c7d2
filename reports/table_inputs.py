"""The frames several report tables start from: a query's logical runs and jobs, the change
events, the lineage of a workflow's rows, the SILENT workflows; and the memo of the counts
frames a page's tables share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import pandas as pd
from sqlalchemy import Engine

from analytics import derived
from analytics.config_tables import event_table, workflow_table
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.outcomes import attach_lineage
from analytics.silence import silent_workflows
from reports.query import Query
from store.bookkeeping import data_stamp
from store.events import all_events
from store.project import Project
from store.runfilter import RunFilter


def logical_runs_of(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return logical_run_frame(engine, project, query.where(project))


def logical_jobs_of(
    engine: Engine, project: Project, query: Query, *, dated: bool = True
) -> pd.DataFrame:
    where = query.where(project, dated=dated)
    return logical_job_frame(engine, project, where, logical_run_frame(engine, project, where))


def events_of(engine: Engine, project: Project) -> pd.DataFrame:
    """The change events (analytics.config_tables.event_table): the configured ones and those
    stored, read once per data stamp (it counts the stored events) for every table that needs
    them, where each table of the Migrations page read them again. Shared: do not modify."""
    return shared_counts(
        f"change events {project.events!r}",
        engine,
        project,
        RunFilter(project.repo),
        lambda _: event_table(all_events(project, engine)),
    )


def with_lineage(frame: pd.DataFrame, project: Project) -> pd.DataFrame:
    return attach_lineage(frame, workflow_table(project.workflows))


COUNTS_KEPT = 16  # counts frames kept (a few per page and filter), the oldest dropped first
_COUNTS: dict[tuple[Any, ...], Any] = {}
Counts = TypeVar("Counts")  # a frame, or a few frames computed together


def shared_counts(
    name: str,
    engine: Engine,
    project: Project,
    where: RunFilter,
    compute: Callable[[bool], Counts],
) -> Counts:
    """The counts frame ``name`` of ``where``: ``compute(current)`` (``current``: whether the
    derived tables are, so the frame comes from one aggregated statement or from the raw
    rows), kept per database, filter and data stamp (store.bookkeeping.data_stamp), so that
    the several tables of a page that read one aggregate run its statement once, and a
    collect is read at once. Shared: do not modify the frame."""
    current = derived_current(engine, project)
    stamp = _read_once("stamp", engine, project, lambda: data_stamp(engine, project.repo))
    key = (name, str(engine.url), where, current, stamp)
    if key not in _COUNTS:
        while len(_COUNTS) >= COUNTS_KEPT:
            _COUNTS.pop(next(iter(_COUNTS)))
        _COUNTS[key] = compute(current)
    found: Counts = _COUNTS[key]
    return found


def derived_current(engine: Engine, project: Project) -> bool:
    """Whether the derived tables hold ``project``'s repository under its job-name rule, so
    that a table counts from them (else from the raw rows)."""
    current: bool = _read_once(
        "current",
        engine,
        project,
        lambda: derived.is_current(engine, project.repo, project.job_name_strip),
    )
    return current


# (what, database, repository, job-name rule) -> what was read, while one table is built
_READ: ContextVar[dict[tuple[str, str, str, str], Any] | None] = ContextVar(
    "table_reads", default=None
)


@contextmanager
def one_state() -> Iterator[None]:
    """Within it (one table's build: reports.tables.build), whether the derived tables are
    current and the data stamp are read once per database and repository, where each shared
    frame and derived_current read them again (a statement each, a round trip each on
    PostgreSQL: 16 of a Migrations page's 27): the table's frames are of one state."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def _read_once(what: str, engine: Engine, project: Project, read: Callable[[], Any]) -> Any:
    """``read()``: once per database and repository within one_state, else each time."""
    reads = _READ.get()
    key = (what, str(engine.url), project.repo, project.job_name_strip)
    if reads is None:
        return read()
    if key not in reads:
        reads[key] = read()
    return reads[key]


def forget_counts() -> None:
    """Empty shared_counts' memo: what a new server process starts with, so a cold
    measurement (bench/dashboard.py) runs every statement a first page view runs."""
    _COUNTS.clear()


def silent_workflows_of(engine: Engine, project: Project) -> pd.DataFrame:
    """analytics.silence.silent_workflows, which reads every run of the repository whatever the
    filter (its moment is the newest stored run, so the data stamp keys it): read once per
    collect for every table that needs it. Shared: do not modify the frame."""
    every = RunFilter(project.repo)
    return shared_counts(
        "silent workflows", engine, project, every, lambda _: silent_workflows(engine, project)
    )
