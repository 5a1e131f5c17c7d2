"""The rollups (``rollup_jobs``, ``rollup_job_outcomes``, ``rollup_runs``,
``rollup_job_names``): the counts the pages group the logical jobs and runs by, kept per scope
key (repository, workflow, branch, event) and UTC day, so that a page reads a row per key and
day instead of one per job. A busy
repository runs many jobs of the same names each day: at scale 1 the default scope's 20,551
logical jobs make 7,463 keys without the runner, and a history sixteen times as busy makes
about the same (#49).

They are kept in the transactions that change what they count: a run's derived rows
(analytics.derived.refresh) and a repository's incident members (store.incidents.replace)
refresh the days of the runs they touched, whole. So a rollup equals the GROUP BY of the
stored rows, and is current whenever the derived tables are (the job names count raw jobs,
stored before their run's derived rows: a day with a pending run may lag until the flush that
makes the tables current again); ``differences`` checks it.

A reader uses them when its filter is whole days (``covers``); a time inside a day, or a list
of runs, reads the derived tables themselves."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, TypeVarTuple

from sqlalchemy import (
    Connection,
    Select,
    Text,
    and_,
    cast,
    delete,
    func,
    insert,
    select,
)

from store.models import (
    IncidentFailure,
    Job,
    LogicalJob,
    LogicalRun,
    RollupJob,
    RollupJobName,
    RollupJobOutcome,
    RollupRun,
    WorkflowRun,
)
from store.runfilter import Bind, RunFilter, UTCDayText, conditions, connected
from store.vocabulary import RED_OUTCOMES

CHUNK = 500  # run ids per IN (...), as store.derived's
SCOPE = ("repo", "workflow_path", "head_branch", "event")
_Columns = TypeVarTuple("_Columns")
Rollup = type[RollupJob] | type[RollupJobOutcome] | type[RollupRun] | type[RollupJobName]


def _first_incident(key: Any, name: str) -> Any:
    """Per ``key`` of the incident members (a job, a run): the smallest incident id."""
    member = IncidentFailure
    return (
        select(key, func.min(member.incident_id).label("incident_id")).group_by(key).subquery(name)
    )


def job_incident() -> Any:
    """Each red logical job's incident: its last red shard's (the smallest id when several)."""
    return _first_incident(IncidentFailure.job_id, "job_incident")


def run_incident() -> Any:
    """Each run's incident: the smallest id among its failures'."""
    return _first_incident(IncidentFailure.run_id, "run_incident")


def _scope() -> list[Any]:
    run = WorkflowRun
    return [*(run.__table__.c[key] for key in SCOPE), UTCDayText(run.created_at).label("day")]


def _jobs(runners: bool = True) -> Select[Any]:
    """RollupJob's rows (RollupJobOutcome's without ``runners``)."""
    job, run, hit = LogicalJob, WorkflowRun, job_incident()
    red = job.logical_outcome.in_(RED_OUTCOMES)
    keys = [*_scope(), job.logical_job, job.logical_outcome, hit.c.incident_id]
    if runners:
        keys += [job.runner_name, cast(job.labels, Text).label("labels")]
    n, last = func.count().label("n"), func.max(run.created_at).label("last_at")
    return (
        select(*keys, n, last)
        .select_from(job)
        .join(run, run.id == job.run_id)
        .outerjoin(hit, and_(hit.c.job_id == job.red_job_id, red))
        .group_by(*keys)
    )


def _runs() -> Select[Any]:
    run, first = WorkflowRun, run_incident()
    outcome = LogicalRun.logical_outcome
    keys = [*_scope(), outcome, first.c.incident_id]
    return (
        select(*keys, func.count().label("runs"))
        .select_from(LogicalRun)
        .join(run, run.id == LogicalRun.run_id)
        .outerjoin(first, and_(first.c.run_id == run.id, outcome.in_(RED_OUTCOMES)))
        .group_by(*keys)
    )


def _job_names() -> Select[Any]:
    run = WorkflowRun
    keys = [*_scope(), Job.name]
    return (
        select(*keys, func.count(func.distinct(run.id)).label("runs"))
        .select_from(Job)
        .join(run, run.id == Job.run_id)
        .where(Job.run_attempt == 1)
        .group_by(*keys)
    )


ROLLUPS: dict[Rollup, Callable[[], Select[Any]]] = {
    RollupJob: _jobs,
    RollupJobOutcome: lambda: _jobs(runners=False),
    RollupRun: _runs,
    RollupJobName: _job_names,
}


def _spans(days: Sequence[date]) -> Iterator[tuple[date, date]]:
    """Sorted distinct ``days`` as runs of consecutive days, (first, last)."""
    start = previous = None
    for day in days:
        if previous is not None and day == previous + timedelta(days=1):
            previous = day
            continue
        if start is not None and previous is not None:
            yield start, previous
        start = previous = day
    if start is not None and previous is not None:
        yield start, previous


def day_start(day: date) -> datetime:
    """The UTC midnight that starts ``day``."""
    return datetime.combine(day, time(), tzinfo=UTC)


def _utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a naive one is UTC already, as the store keeps times)."""
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def midnight(moment: datetime) -> datetime:
    """The UTC midnight that starts the UTC day of ``moment``."""
    return day_start(_utc(moment).date())


def refresh(conn: Connection, run_ids: Sequence[int]) -> None:
    """Count again, in ``conn``'s transaction, every day on which one of ``run_ids`` was
    created, in its repository: the days' rows of every rollup replaced by a GROUP BY of the
    stored rows of all of those days' runs."""
    days = _days(conn, run_ids)
    for repo in sorted({repo for repo, _ in days}):
        found = sorted(date.fromisoformat(value) for name, value in days if name == repo)
        for first, last in _spans(found):
            _recount(conn, repo, first, last)


def _days(conn: Connection, run_ids: Sequence[int]) -> set[tuple[str, str]]:
    """(repository, UTC day text) of each of ``run_ids``."""
    run = WorkflowRun
    days: set[tuple[str, str]] = set()
    ids = sorted(set(run_ids))
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        stmt = select(run.repo, UTCDayText(run.created_at)).where(run.id.in_(chunk)).distinct()
        days.update((repo, str(value)) for repo, value in conn.execute(stmt))
    return days


def rebuild(conn: Connection, repo: str) -> None:
    """Count every day of ``repo`` again: its rows of every rollup replaced."""
    _recount(conn, repo, None, None)


def _recount(conn: Connection, repo: str, first: date | None, last: date | None) -> None:
    """Delete the days' rows, then insert their GROUP BY. On PostgreSQL the repository's
    writers take turns (a transaction-scoped advisory lock): under READ COMMITTED, a second
    writer's DELETE would skip the rows the first inserted and count its days twice. SQLite
    has one writer at a time already."""
    run = WorkflowRun
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"rollups {repo}"))))
    for model, rows in ROLLUPS.items():
        gone = delete(model).where(model.repo == repo)
        source = rows().where(run.repo == repo)
        if first is not None and last is not None:
            gone = gone.where(model.day >= first.isoformat(), model.day <= last.isoformat())
            source = source.where(
                run.created_at >= day_start(first),
                run.created_at < day_start(last + timedelta(days=1)),
            )
        conn.execute(gone)
        names = [column.name for column in source.selected_columns]
        conn.execute(insert(model).from_select(names, source))


def covers(where: RunFilter) -> bool:
    """Whether the rollups hold what ``where`` selects: whole UTC days (or open ends), no list
    of runs."""
    ends = [end for end in (where.since, where.until) if end is not None]
    return not where.run_ids and all(is_midnight(end) for end in ends)


def is_midnight(moment: datetime) -> bool:
    """Whether ``moment`` starts a UTC day."""
    return midnight(moment) == _utc(moment)


def first_whole_day(moment: datetime) -> str:
    """The first UTC day that starts at or after ``moment``, as the rollups' ``day``."""
    return day_text(midnight(moment) + timedelta(days=0 if is_midnight(moment) else 1))


def day_text(moment: datetime) -> str:
    """The UTC day of ``moment``, as the rollups' ``day``."""
    return midnight(moment).date().isoformat()


def within(stmt: Select[*_Columns], model: Rollup, where: RunFilter) -> Select[*_Columns]:
    """``stmt`` over ``model`` cut to what ``where`` selects (``covers`` must hold): its scope
    columns as a run's, its days for the dates."""
    days = replace(where, since=None, until=None, run_ids=())
    terms = conditions(days, model)
    if where.since is not None:
        terms.append(model.day >= day_text(where.since))
    if where.until is not None:
        terms.append(model.day < day_text(where.until))
    return stmt.where(*terms)


def differences(bind: Bind, repo: str, waiting: Sequence[int] = ()) -> dict[str, int]:
    """Rows of ``repo``'s rollups that differ from a GROUP BY of the stored rows (missing or
    extra), per table: empty when they agree. The days of the ``waiting`` runs (pending) are
    left out: the job names count the raw jobs, stored before their run's derived rows are."""
    found: dict[str, int] = {}
    with connected(bind) as conn:
        left_out = {day for name, day in _days(conn, waiting) if name == repo}
        for model, rows in ROLLUPS.items():
            source = rows().where(WorkflowRun.repo == repo)
            names = [column.name for column in source.selected_columns]
            stored = select(*(model.__table__.c[name] for name in names)).where(model.repo == repo)
            # as multisets: a day counted twice is as wrong as one not counted
            kept = [
                Counter(row for row in conn.execute(stmt).all() if row.day not in left_out)
                for stmt in (stored, source)
            ]
            count = sum(((kept[0] - kept[1]) + (kept[1] - kept[0])).values())
            if count:
                found[model.__tablename__] = count
    return found
