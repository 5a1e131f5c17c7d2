"""The filter every read query takes (repository, dates, workflows, scope) and how a
filtered select becomes a DataFrame; shared by store.frame_queries and store.page_queries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVarTuple

from sqlalchemy import ColumnElement, Connection, Engine, Select, case, select, true
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql.expression import FunctionElement

from store.models import (
    WorkflowRun,
)

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd


def _time_function(name: str, doc: str, sqlite: str, postgresql: str) -> type[FunctionElement[Any]]:
    """A SQL function of one stored time, written ``sqlite`` on SQLite (which stores times as
    UTC text) and ``postgresql`` on PostgreSQL, ``{}`` standing for the time."""

    def compiled(text: str) -> Any:
        def write(element: FunctionElement[Any], compiler: Any, **kw: Any) -> str:
            return text.format(compiler.process(element.clauses, **kw))

        return write

    function = type(name, (FunctionElement,), {"__doc__": doc, "name": name, "inherit_cache": True})
    compiles(function)(compiled(sqlite))
    compiles(function, "postgresql")(compiled(postgresql))
    return function


UTCDay = _time_function(
    "utc_day",
    """The UTC calendar day of a stored time, whatever the session's time zone: PostgreSQL's
    ``date()`` of a timestamptz uses the session's (a server or a PGTZ in Asia/Shanghai would
    move every evening run to the next day).""",
    "date({})",
    "date(timezone('UTC', {}))",
)
UTCWeek = _time_function(
    "utc_week",
    "The Monday (UTC) that starts the ISO week of a stored time, as ``YYYY-MM-DD`` text.",
    "date({}, 'weekday 0', '-6 days')",
    "to_char(date_trunc('week', timezone('UTC', {})), 'YYYY-MM-DD')",
)
UTCWeekOfDay = _time_function(
    "utc_week_of_day",
    "UTCWeek of a ``YYYY-MM-DD`` day text (store.rollups' days).",
    "date({}, 'weekday 0', '-6 days')",
    "to_char(date_trunc('week', CAST({} AS timestamp)), 'YYYY-MM-DD')",
)
DayDate = _time_function(
    "day_date",
    """A ``YYYY-MM-DD`` day text (store.rollups' days) as the backend gives UTCDay: the text
    itself on SQLite, a date on PostgreSQL.""",
    "{}",
    "CAST({} AS date)",
)
UTCText = _time_function(
    "utc_text",
    """A stored time as UTC text, ``YYYY-MM-DD HH:MM:SS.ffffff`` as SQLite stores it, for a
    big result that pandas parses in one go (raw_frame's ``times``): the zoned datetimes
    psycopg gives cost pandas about 2 us each to take in, text a tenth of that.""",
    "{}",
    "to_char(timezone('UTC', {}), 'YYYY-MM-DD HH24:MI:SS.US')",
)
UTCDayText = _time_function(
    "utc_day_text",
    """UTCDay as ``YYYY-MM-DD`` text on every backend (PostgreSQL's date is a Python date
    object to take in, as costly as a datetime), for the same reason as UTCText.""",
    "date({})",
    "to_char(timezone('UTC', {}), 'YYYY-MM-DD')",
)


class Unindexed(FunctionElement[Any]):
    """A column SQLite may not look rows up by (its unary ``+``, the documented way to keep a
    term off the indexes), so that a statement over the rows hanging off a few runs (the
    failures) starts from them and looks each run up by its key: the repository asked of the
    joined runs let SQLite walk every run of it first, by ix_workflow_runs_repo_created_at
    above all. PostgreSQL plans from its statistics and gets the bare column."""

    name = "unindexed"
    inherit_cache = True

    def __init__(self, column: ColumnElement[Any] | QueryableAttribute[Any]) -> None:
        super().__init__(column)
        self.type = column.type  # a value compared with it binds as the column's (UTC times)


@compiles(Unindexed)
def _unindexed_sqlite(element: Unindexed, compiler: Any, **kw: Any) -> str:
    return f"+{compiler.process(element.clauses, **kw)}"


@compiles(Unindexed, "postgresql")
def _unindexed_postgresql(element: Unindexed, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.clauses, **kw))


def conclusion(model: Any) -> Any:
    """The conclusion every reader counts by: GitHub's, except ``timed_out`` where the collector
    found that a job hit its time limit (GitHub reports those jobs and their runs
    ``cancelled``), so that timeouts are red, not excluded."""
    return case((model.timed_out, "timed_out"), else_=model.conclusion).label("conclusion")


@dataclass(frozen=True)
class RunFilter:
    """Which runs to load: ``since`` inclusive, ``until`` exclusive, ``paths`` = workflow files,
    ``events`` = trigger events, ``branch`` = head branch (a scope, pushed into SQL so a page
    never loads the runs it would drop), ``run_ids`` = these runs only (the collector's batch)."""

    repo: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    paths: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    branch: str | None = None
    run_ids: tuple[int, ...] = ()


_Columns = TypeVarTuple("_Columns")


def filtered(stmt: Select[*_Columns], where: RunFilter) -> Select[*_Columns]:
    return stmt.where(*conditions(where))


def conditions(where: RunFilter, run: Any = WorkflowRun) -> list[ColumnElement[bool]]:
    """What ``where`` asks of a run (``workflow_runs``, or the scope columns of a table that
    has them: store.rollups), as terms to AND; none: every run."""
    terms: list[ColumnElement[bool]] = []
    if where.repo is not None:
        terms.append(run.repo == where.repo)
    if where.since is not None:
        terms.append(run.created_at >= where.since)
    if where.until is not None:
        terms.append(run.created_at < where.until)
    if where.paths:
        terms.append(run.workflow_path.in_(where.paths))
    if where.events:
        terms.append(run.event.in_(where.events))
    if where.branch is not None:
        terms.append(run.head_branch == where.branch)
    if where.run_ids:
        terms.append(run.id.in_(where.run_ids))
    return terms


def selects_run(run_id: Any, where: RunFilter) -> ColumnElement[bool]:
    """Whether the run ``run_id`` names is one ``where`` selects, asked of that run alone by its
    key (EXISTS): a statement that reads rows hanging off a few runs (failures, incident
    members) then starts from them, where a join to the runs let the planner walk every run
    of the repository first (by ix_workflow_runs_repo_created_at on SQLite: 0.06 -> 0.20 s
    for the incidents' lineages at 16x). True when ``where`` selects every run."""
    terms = conditions(where)
    if not terms:
        return true()
    run = WorkflowRun
    # its own runs even where the outer statement joins the runs too
    return select(run.id).where(run.id == run_id, *terms).correlate_except(run).exists()


Bind = Engine | Connection


@contextmanager
def connected(bind: Bind) -> Iterator[Connection]:
    """A connection of ``bind``: itself when it is one (the collector reads its own batch in
    the transaction that writes it), else a new one of the engine."""
    if isinstance(bind, Connection):
        yield bind
    else:
        with bind.connect() as conn:
            yield conn


def as_frame(
    engine: Bind, stmt: Select[*tuple[Any, ...]], times: tuple[str, ...] = ()
) -> pd.DataFrame:
    import pandas as pd

    with connected(engine) as conn:
        result = conn.execute(stmt)
        frame = pd.DataFrame(result.all(), columns=list(result.keys()))
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def utc(value: datetime | str | None) -> datetime | None:
    """Aggregates bypass the column type on SQLite: parse and mark them UTC here."""
    import pandas as pd

    return None if value is None else pd.Timestamp(value).tz_localize(None).tz_localize("UTC")


def raw_frame(
    engine: Bind, stmt: Select[*tuple[Any, ...]], times: tuple[str, ...] = ()
) -> pd.DataFrame:
    """Like ``as_frame`` for big results, fetched from the DBAPI cursor: SQLAlchemy's per-row
    type processing costs more than the query here, and pandas parses times in one go."""
    import pandas as pd

    with connected(engine) as conn:
        result = conn.execute(stmt)
        frame = pd.DataFrame(result.cursor.fetchall(), columns=list(result.keys()))
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    return frame
