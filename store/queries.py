"""Named read queries. Every SQL statement the upper layers need lives here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, Select, String, case, func, select, type_coerce
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import FunctionElement

from store.models import (
    Base,
    Failure,
    Job,
    JobAnnotations,
    JobLog,
    RunAttempt,
    SyncLog,
    SyncState,
    Workflow,
    WorkflowRun,
)

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd


def table_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            name: conn.scalar(select(func.count()).select_from(table)) or 0
            for name, table in sorted(Base.metadata.tables.items())
        }


# ---- analytics frames -----------------------------------------------------------------------
# One loader per frame the analytics need. Filters run in SQL on the run (repo, creation time,
# workflow path), so a page asks only for the runs it shows. Times come back tz-aware UTC.


class UTCDay(FunctionElement[Any]):
    """The UTC calendar day of a stored time, whatever the session's time zone: PostgreSQL's
    ``date()`` of a timestamptz uses the session's (a server or a PGTZ in Asia/Shanghai would
    move every evening run to the next day); SQLite stores UTC text already."""

    name = "utc_day"
    inherit_cache = True


@compiles(UTCDay)
def _utc_day_text(element: UTCDay, compiler: Any, **kw: Any) -> str:
    return f"date({compiler.process(element.clauses, **kw)})"


@compiles(UTCDay, "postgresql")
def _utc_day_postgresql(element: UTCDay, compiler: Any, **kw: Any) -> str:
    return f"date(timezone('UTC', {compiler.process(element.clauses, **kw)}))"


def conclusion(model: Any) -> Any:
    """The conclusion every reader counts by: GitHub's, except ``timed_out`` where the collector
    found that a job hit its time limit (GitHub reports those jobs and their runs
    ``cancelled``), so that timeouts are red, not excluded."""
    return case((model.timed_out, "timed_out"), else_=model.conclusion).label("conclusion")


@dataclass(frozen=True)
class RunFilter:
    """Which runs to load: ``since`` inclusive, ``until`` exclusive, ``paths`` = workflow files,
    ``events`` = trigger events, ``branch`` = head branch (a scope, pushed into SQL so a page
    never loads the runs it would drop)."""

    repo: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    paths: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    branch: str | None = None


def _filtered(stmt: Select[Any], where: RunFilter) -> Select[Any]:
    run = WorkflowRun
    if where.repo is not None:
        stmt = stmt.where(run.repo == where.repo)
    if where.since is not None:
        stmt = stmt.where(run.created_at >= where.since)
    if where.until is not None:
        stmt = stmt.where(run.created_at < where.until)
    if where.paths:
        stmt = stmt.where(run.workflow_path.in_(where.paths))
    if where.events:
        stmt = stmt.where(run.event.in_(where.events))
    if where.branch is not None:
        stmt = stmt.where(run.head_branch == where.branch)
    return stmt


def _frame(engine: Engine, stmt: Select[Any], times: tuple[str, ...] = ()) -> pd.DataFrame:
    import pandas as pd

    with engine.connect() as conn:
        result = conn.execute(stmt)
        frame = pd.DataFrame(result.all(), columns=list(result.keys()))
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def load_runs(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """One row per run as GitHub reports it now (its latest attempt), with the workflow's name.

    Columns: run_id, repo, workflow_id, workflow_path, workflow_name, event, head_branch,
    head_sha, run_number, run_attempt, status, conclusion, created_at, html_url."""
    run = WorkflowRun
    stmt = (
        select(
            run.id.label("run_id"),
            run.repo,
            run.workflow_id,
            run.workflow_path,
            func.coalesce(Workflow.name, run.name).label("workflow_name"),
            run.event,
            run.head_branch,
            run.head_sha,
            run.run_number,
            run.run_attempt,
            run.status,
            conclusion(run),
            run.created_at,
            run.html_url,
        )
        .outerjoin(Workflow, Workflow.id == run.workflow_id)
        .order_by(run.created_at, run.id)
    )
    return _raw_frame(engine, _filtered(stmt, where), ("created_at",))


def run_outcomes(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """The selected runs with only what logical outcomes and the dashboard's pages read, in no
    particular order: run_id, workflow_path, event, head_branch, head_sha, run_attempt,
    conclusion, created_at, html_url."""
    run = WorkflowRun
    stmt = select(
        run.id.label("run_id"),
        run.workflow_path,
        run.event,
        run.head_branch,
        run.head_sha,
        run.run_attempt,
        conclusion(run),
        run.created_at,
        run.html_url,
    )
    return _raw_frame(engine, _filtered(stmt, where), ("created_at",))


def load_attempts(
    engine: Engine, where: RunFilter = RunFilter(), *, reruns_only: bool = False
) -> pd.DataFrame:
    """Every stored attempt of the selected runs. Columns: run_id, attempt, status, conclusion.
    ``reruns_only``: only of runs with more than one attempt, the only ones whose logical
    outcome the attempts change (analytics.outcomes.logical_runs)."""
    att = RunAttempt
    stmt = (
        select(att.run_id, att.attempt, att.status, conclusion(att))
        .join(WorkflowRun, WorkflowRun.id == att.run_id)
        .order_by(att.run_id, att.attempt)
    )
    if reruns_only:
        stmt = stmt.where(WorkflowRun.run_attempt > 1)
    return _raw_frame(engine, _filtered(stmt, where))


def load_jobs(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Every job of every attempt of the selected runs.

    Columns: job_id, run_id, run_attempt, name, status, conclusion, created_at, started_at,
    completed_at, runner_name, runner_group_name, labels (list of str), html_url."""
    stmt = (
        select(
            Job.id.label("job_id"),
            Job.run_id,
            Job.run_attempt,
            Job.name,
            Job.status,
            conclusion(Job),
            Job.created_at,
            Job.started_at,
            Job.completed_at,
            Job.runner_name,
            Job.runner_group_name,
            Job.labels,
            Job.html_url,
        )
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .order_by(Job.run_id, Job.run_attempt, Job.id)
    )
    return _frame(engine, _filtered(stmt, where), ("created_at", "started_at", "completed_at"))


FAILURE_DETAIL = ("rule", "signature", "line", "env")


def load_failures(
    engine: Engine, where: RunFilter = RunFilter(), *, detail: tuple[str, ...] = FAILURE_DETAIL
) -> pd.DataFrame:
    """The classified failures of the selected runs (``job_id`` 0: the run itself).

    Columns: run_id, run_attempt, job_id, category, evidence, stage, log_status (of the job's
    log; None for a run without jobs), then the ``detail`` columns asked for, of rule,
    signature, line and env (dict): run and job categories need none."""
    fail = Failure
    columns = {
        "rule": fail.rule,
        "signature": fail.signature,
        "line": fail.line,
        "env": type_coerce(fail.env, String).label("env"),
    }
    stmt = (
        select(
            fail.run_id,
            fail.run_attempt,
            fail.job_id,
            fail.category,
            fail.evidence,
            fail.stage,
            JobLog.status.label("log_status"),
        )
        .add_columns(*(columns[name] for name in detail))
        .join(WorkflowRun, WorkflowRun.id == fail.run_id)
        .outerjoin(JobLog, JobLog.job_id == fail.job_id)
        .order_by(fail.run_id, fail.run_attempt, fail.job_id)
    )
    frame = _raw_frame(engine, _filtered(stmt, where))
    if "env" in detail:
        frame["env"] = _json_values(frame["env"])
    return frame


def _json_values(column: pd.Series) -> pd.Series:
    """JSON text fetched raw (SQLite) parsed once per distinct text; drivers that parse JSON
    themselves (psycopg) hand over dicts, kept as they are."""
    import pandas as pd

    parsed: dict[str, Any] = {}

    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value not in parsed:
            parsed[value] = json.loads(value)
        return parsed[value]

    return pd.Series([parse(v) for v in column], index=column.index, dtype="object")


def daily_run_counts(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Runs per workflow, day and conclusion of the latest attempt, counted in SQL: the cheap
    overview (activity, staleness) that needs no attempt or job rows.

    Columns: workflow_path, day (tz-aware UTC midnight), conclusion, runs."""
    run = WorkflowRun
    day = UTCDay(run.created_at).label("day")
    effective = conclusion(run)
    stmt = (
        select(run.workflow_path, day, effective, func.count().label("runs"))
        .group_by(run.workflow_path, day, effective)
        .order_by(run.workflow_path, day)
    )
    return _frame(engine, _filtered(stmt, where), ("day",))


def daily_job_presence(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Per workflow, UTC day and job name: how many runs had a job of that name in their first
    attempt, counted in SQL (when each job joined or left a workflow, without loading jobs).

    Columns: workflow_path, day (tz-aware UTC midnight), name, runs."""
    run = WorkflowRun
    day = UTCDay(run.created_at).label("day")
    stmt = (
        select(run.workflow_path, day, Job.name, func.count(func.distinct(run.id)).label("runs"))
        .join(Job, Job.run_id == run.id)
        .where(Job.run_attempt == 1)
        .group_by(run.workflow_path, day, Job.name)
        .order_by(run.workflow_path, day, Job.name)
    )
    return _raw_frame(engine, _filtered(stmt, where), ("day",))


# -- dashboard reads: small aggregates and single rows, so a page never loads a whole table


def repositories(engine: Engine) -> list[str]:
    """Every repository with stored runs."""
    with engine.connect() as conn:
        stmt = select(WorkflowRun.repo).distinct().order_by(WorkflowRun.repo)
        return list(conn.scalars(stmt))


def run_span(engine: Engine, repo: str) -> tuple[datetime | None, datetime | None]:
    """The creation times of a repository's oldest and newest stored run."""
    run = WorkflowRun
    stmt = select(func.min(run.created_at), func.max(run.created_at)).where(run.repo == repo)
    with engine.connect() as conn:
        oldest, newest = conn.execute(stmt).one()
    return _utc(oldest), _utc(newest)


def _utc(value: datetime | str | None) -> datetime | None:
    """Aggregates bypass the column type on SQLite: parse and mark them UTC here."""
    import pandas as pd

    return None if value is None else pd.Timestamp(value).tz_localize(None).tz_localize("UTC")


def latest_run_url(engine: Engine, repo: str) -> str | None:
    """The web address of the newest run: its host tells GitHub from a local replica."""
    run = WorkflowRun
    stmt = select(run.html_url).where(run.repo == repo).order_by(run.created_at.desc()).limit(1)
    with engine.connect() as conn:
        return conn.scalar(stmt)


def daily_failure_counts(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Classified failures per day and category, counted in SQL.

    Columns: day (tz-aware UTC midnight), category, failures."""
    day = UTCDay(WorkflowRun.created_at).label("day")
    stmt = (
        select(day, Failure.category, func.count().label("failures"))
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .group_by(day, Failure.category)
        .order_by(day)
    )
    return _frame(engine, _filtered(stmt, where), ("day",))


def signature_summary(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """One row per failure signature seen in the selected runs, aggregated in SQL.

    Columns: signature, category, rule, failures, jobs, first_seen_here, last_seen (in the
    selection), first_seen (in the repository's whole history), and of the newest failure:
    line, job_id, runner_name, html_url (the job's, else the run's)."""
    import pandas as pd

    run = WorkflowRun
    counted = _filtered(
        select(
            Failure.signature,
            func.count().label("failures"),
            func.count(func.distinct(Failure.job_id)).label("jobs"),
            func.min(run.created_at).label("first_seen_here"),
            func.max(run.created_at).label("last_seen"),
        )
        .join(run, run.id == Failure.run_id)
        .group_by(Failure.signature),
        where,
    )
    ever = select(Failure.signature, func.min(run.created_at).label("first_seen")).join(
        run, run.id == Failure.run_id
    )
    if where.repo is not None:
        ever = ever.where(run.repo == where.repo)
    newest = func.row_number().over(
        partition_by=Failure.signature, order_by=(run.created_at.desc(), Failure.job_id.desc())
    )
    examples = _filtered(
        select(
            Failure.signature,
            Failure.category,
            Failure.rule,
            Failure.line,
            Failure.job_id,
            Job.runner_name,
            func.coalesce(Job.html_url, run.html_url).label("html_url"),
            newest.label("rank"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Job, Job.id == Failure.job_id),
        where,
    ).subquery()
    latest = select(examples).where(examples.c.rank == 1)
    times = ("first_seen_here", "last_seen", "first_seen")
    frame = _frame(engine, counted).merge(
        _frame(engine, ever.group_by(Failure.signature)), on="signature", how="left"
    )
    frame = frame.merge(_frame(engine, latest).drop(columns="rank"), on="signature", how="left")
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    return frame.sort_values("failures", ascending=False, kind="stable").reset_index(drop=True)


def signature_failures(
    engine: Engine, signature: str, where: RunFilter = RunFilter(), limit: int = 50
) -> pd.DataFrame:
    """The newest failures with one signature, for a drill-down (columns of failure_details)."""
    return failure_details(engine, where, signature=signature, limit=limit)


def failure_details(
    engine: Engine,
    where: RunFilter = RunFilter(),
    *,
    signature: str | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """Failures with where they happened, newest first: for drill-downs, the summary and CSV.

    Columns: run_id, run_attempt, job_id, created_at (of the run), workflow_path, job_name,
    runner_name, category, rule, signature, line_number, line, context (list of str), html_url
    (the job's, else the run's), log_status, evidence, stage."""
    run = WorkflowRun
    stmt = (
        select(
            Failure.run_id,
            Failure.run_attempt,
            Failure.job_id,
            run.created_at,
            run.workflow_path,
            Job.name.label("job_name"),
            Job.runner_name,
            Failure.category,
            Failure.rule,
            Failure.signature,
            Failure.line_number,
            Failure.line,
            Failure.context,
            func.coalesce(Job.html_url, run.html_url).label("html_url"),
            JobLog.status.label("log_status"),
            Failure.evidence,
            Failure.stage,
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Job, Job.id == Failure.job_id)
        .outerjoin(JobLog, JobLog.job_id == Failure.job_id)
        .order_by(run.created_at.desc(), Failure.job_id.desc())
    )
    if signature is not None:
        stmt = stmt.where(Failure.signature == signature)
    if limit is not None:
        stmt = stmt.limit(limit)
    return _frame(engine, _filtered(stmt, where), ("created_at",))


def _raw_frame(engine: Engine, stmt: Select[Any], times: tuple[str, ...] = ()) -> pd.DataFrame:
    """Like ``_frame`` for big results, fetched from the DBAPI cursor: SQLAlchemy's per-row
    type processing costs more than the query here, and pandas parses times in one go."""
    import pandas as pd

    with engine.connect() as conn:
        result = conn.execute(stmt)
        frame = pd.DataFrame(result.cursor.fetchall(), columns=list(result.keys()))
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    return frame


def job_outcomes(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Every job of every attempt of the selected runs, only what outcomes need: job_id,
    run_id, run_attempt, name, conclusion, runner_name, labels (the JSON text as stored)."""
    stmt = select(
        Job.id.label("job_id"),
        Job.run_id,
        Job.run_attempt,
        Job.name,
        conclusion(Job),
        Job.runner_name,
        type_coerce(Job.labels, String).label("labels"),
    ).join(WorkflowRun, WorkflowRun.id == Job.run_id)
    return _raw_frame(engine, _filtered(stmt, where))


def job_log(engine: Engine, job_id: int) -> tuple[bytes, str | None] | None:
    """The archived log of one job as stored (content, compression), or None."""
    stmt = select(JobLog.content, JobLog.compression).where(
        JobLog.job_id == job_id, JobLog.status == "ok"
    )
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    return None if row is None or row[0] is None else (row[0], row[1])


# ---- collector bookkeeping ------------------------------------------------------------------
# What the collector must know about what it stored before, to ask GitHub only for news.


def run_fingerprints(session: Session, run_ids: list[int]) -> dict[int, tuple[Any, ...]]:
    """(run_attempt, status, conclusion, updated_at) of the stored runs among ``run_ids``."""
    found: dict[int, tuple[Any, ...]] = {}
    run = WorkflowRun
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start : start + 500]
        stmt = select(run.id, run.run_attempt, run.status, run.conclusion, run.updated_at).where(
            run.id.in_(chunk)
        )
        for row in session.execute(stmt):
            found[row[0]] = tuple(row[1:])
    return found


def incomplete_run_ids(session: Session, workflow_id: int, before: datetime) -> list[int]:
    """Stored runs of a workflow created before ``before`` that had not completed (and that
    GitHub still has)."""
    run = WorkflowRun
    stmt = select(run.id).where(
        run.workflow_id == workflow_id,
        run.created_at < before,
        (run.status.is_(None)) | (run.status != "completed"),
        run.deleted_at.is_(None),
    )
    return list(session.scalars(stmt))


def runs_with_jobs(session: Session, run_ids: list[int]) -> set[int]:
    """The runs among ``run_ids`` whose jobs are stored."""
    found: set[int] = set()
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start : start + 500]
        found.update(session.scalars(select(Job.run_id).where(Job.run_id.in_(chunk)).distinct()))
    return found


def settled_log_job_ids(session: Session, job_ids: list[int]) -> set[int]:
    """Jobs whose log is archived, expired or missing: never asked for again."""
    settled: set[int] = set()
    for start in range(0, len(job_ids), 500):
        chunk = job_ids[start : start + 500]
        stmt = select(JobLog.job_id).where(JobLog.job_id.in_(chunk), JobLog.status != "error")
        settled.update(session.scalars(stmt))
    return settled


def stored_annotations(session: Session, job_ids: list[int]) -> dict[int, list[Any]]:
    """The annotations already fetched for any of ``job_ids``: never asked for again."""
    found: dict[int, list[Any]] = {}
    for start in range(0, len(job_ids), 500):
        chunk = job_ids[start : start + 500]
        stmt = select(JobAnnotations.job_id, JobAnnotations.annotations).where(
            JobAnnotations.job_id.in_(chunk)
        )
        found.update({job_id: list(notes or []) for job_id, notes in session.execute(stmt)})
    return found


def all_annotations(session: Session) -> dict[int, list[Any]]:
    """Every stored job's annotations, for ``reclassify``."""
    stmt = select(JobAnnotations.job_id, JobAnnotations.annotations)
    return {job_id: list(notes or []) for job_id, notes in session.execute(stmt)}


def mark_runs_deleted(session: Session, run_ids: list[int], at: datetime) -> None:
    """Stored runs that GitHub answers 404 for: kept, and asked for no more."""
    session.execute(
        WorkflowRun.__table__.update().where(WorkflowRun.id.in_(run_ids)).values(deleted_at=at)
    )


def jobs_with_log_errors(session: Session, repo: str) -> list[Job]:
    """Failed jobs whose log download failed last time, to try again."""
    stmt = (
        select(Job)
        .join(JobLog, JobLog.job_id == Job.id)
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(JobLog.status == "error", WorkflowRun.repo == repo)
    )
    return list(session.scalars(stmt))


def sync_states(session: Session, repo: str) -> dict[int, SyncState]:
    return {
        s.workflow_id: s for s in session.scalars(select(SyncState).where(SyncState.repo == repo))
    }


def stored_workflows(session: Session, repo: str) -> list[Workflow]:
    return list(session.scalars(select(Workflow).where(Workflow.repo == repo)))


def archived_logs(session: Session, batch: int = 200) -> Iterator[tuple[Job, JobLog]]:
    """Every archived log with its job, in batches, for ``reclassify``."""
    stmt = (
        select(Job, JobLog)
        .join(JobLog, JobLog.job_id == Job.id)
        .where(JobLog.status == "ok")
        .order_by(Job.id)
        .execution_options(yield_per=batch)
    )
    for row in session.execute(stmt):
        yield row.tuple()


def jobs_without_logs(session: Session) -> list[Job]:
    """Failed jobs with an expired or missing log: classified from job-level evidence."""
    stmt = select(Job).join(JobLog, JobLog.job_id == Job.id).where(JobLog.status != "ok")
    return list(session.scalars(stmt))


def workflow_sync_states(engine: Engine, repo: str) -> dict[str, SyncState]:
    """Each stored workflow's sync state, by workflow path (workflows never collected are left
    out)."""
    with Session(engine, expire_on_commit=False) as session:
        stmt = (
            select(Workflow.path, SyncState)
            .join(SyncState, (SyncState.workflow_id == Workflow.id) & (SyncState.repo == repo))
            .where(Workflow.repo == repo)
        )
        return {path: state for path, state in session.execute(stmt)}


def last_sync(engine: Engine, repo: str) -> SyncLog | None:
    with Session(engine) as session:
        stmt = (
            select(SyncLog)
            .where(SyncLog.repo == repo, SyncLog.status == "ok")
            .order_by(SyncLog.id.desc())
            .limit(1)
        )
        return session.scalar(stmt)


def job_failures(session: Session) -> list[Failure]:
    """Failures of jobs (not of whole runs), for comparing a reclassification."""
    return list(session.scalars(select(Failure).where(Failure.job_id != 0)))
