"""What the collector must know about what it stored before, to ask GitHub only for news."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, and_, func, or_, select
from sqlalchemy.orm import Session

from store.backfill import Progress, progress_of
from store.models import (
    ChangeEvent,
    DerivedState,
    Failure,
    Job,
    JobAnnotations,
    JobLog,
    KnownIssue,
    SyncLog,
    SyncState,
    TriageLog,
    Workflow,
    WorkflowRun,
)
from store.runfilter import Bind, connected

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    pass


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


def stored_logs(session: Session, job_ids: list[int]) -> dict[int, JobLog]:
    """The ``job_logs`` rows of ``job_ids`` that have one (archived, expired, missing or
    refused)."""
    found: dict[int, JobLog] = {}
    for start in range(0, len(job_ids), 500):
        chunk = job_ids[start : start + 500]
        found.update(
            {
                log.job_id: log
                for log in session.scalars(select(JobLog).where(JobLog.job_id.in_(chunk)))
            }
        )
    return found


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


def workflow_of_runs(session: Session, run_ids: list[int]) -> dict[int, int]:
    """run id -> its workflow's id, for the stored runs among ``run_ids``."""
    return _of_runs(session, run_ids, WorkflowRun.workflow_id)


def repo_of_runs(session: Session, run_ids: list[int]) -> dict[int, str]:
    """run id -> its repository, for the stored runs among ``run_ids``."""
    return _of_runs(session, run_ids, WorkflowRun.repo)


def _of_runs(session: Session, run_ids: list[int], column: Any) -> dict[int, Any]:
    found: dict[int, Any] = {}
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start : start + 500]
        stmt = select(WorkflowRun.id, column).where(WorkflowRun.id.in_(chunk))
        found.update((run_id, value) for run_id, value in session.execute(stmt))
    return found


def sync_states(session: Session, repo: str) -> dict[int, SyncState]:
    return {
        s.workflow_id: s for s in session.scalars(select(SyncState).where(SyncState.repo == repo))
    }


def stored_workflows(session: Session, repo: str) -> list[Workflow]:
    return list(session.scalars(select(Workflow).where(Workflow.repo == repo)))


def archived_logs(session: Session, batch: int = 200) -> Iterator[tuple[Job, JobLog, str]]:
    """Every archived log with its job and the job's repository (whose own rules classify it),
    in batches, for ``reclassify``."""
    stmt = (
        select(Job, JobLog, WorkflowRun.repo)
        .join(JobLog, JobLog.job_id == Job.id)
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(JobLog.status == "ok")
        .order_by(Job.id)
        .execution_options(yield_per=batch)
    )
    for row in session.execute(stmt):
        yield row[0], row[1], row[2]


def jobs_without_logs(session: Session) -> list[tuple[Job, str]]:
    """Failed jobs with an expired or missing log, with their repository: classified from
    job-level evidence."""
    stmt = (
        select(Job, WorkflowRun.repo)
        .join(JobLog, JobLog.job_id == Job.id)
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(JobLog.status != "ok")
    )
    return [(job, repo) for job, repo in session.execute(stmt)]


def stored_workflow_paths(engine: Engine, repo: str) -> set[str]:
    """The paths of the repository's workflows as GitHub last listed them (and those found by
    file name): empty before a collect has listed them."""
    with Session(engine) as session:
        return set(session.scalars(select(Workflow.path).where(Workflow.repo == repo)))


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


def workflow_progress(engine: Engine, repo: str) -> dict[str, Progress]:
    """Each collected workflow's backfill progress, by path."""
    return {
        path: progress_of(state.window_start, state.backfill, state.watermark)
        for path, state in workflow_sync_states(engine, repo).items()
    }


# A collect stopped by the request budget (`--max-requests`, `[collect] reserve`) closes its
# sync_log "stopped"; one the budget never reached sent no request at all.
STOPPED = "stopped"


@dataclass(frozen=True)
class LastCollect:
    """The last collect of a repository that reached GitHub: when it ended, and why it ended
    before its end (None: it finished). The freshness line of the pages and the summary."""

    at: datetime
    stopped: str | None = None


def last_collect(engine: Engine, repo: str) -> LastCollect | None:
    """The last collect that finished, or that the request budget stopped after it reached
    GitHub; a collect the shared budget never reached is none (its repository waits)."""
    reached = or_(SyncLog.status == "ok", and_(SyncLog.status == STOPPED, SyncLog.requests > 0))
    with Session(engine) as session:
        stmt = (
            select(SyncLog)
            .where(SyncLog.repo == repo, reached)
            .order_by(SyncLog.id.desc())
            .limit(1)
        )
        row = session.scalar(stmt)
    if row is None:
        return None
    at = row.finished_at or row.started_at
    stopped = (row.message or "the request budget") if row.status == STOPPED else None
    return LastCollect(at if at.tzinfo else at.replace(tzinfo=UTC), stopped)


def all_failures(session: Session) -> list[Failure]:
    """Every stored failure (of jobs, and of whole runs), for comparing a reclassification."""
    return list(session.scalars(select(Failure)))


def run_failures(session: Session) -> list[tuple[Failure, str]]:
    """Failures of whole runs (``job_id`` 0: no jobs, or ``startup_failure``), with their
    repository: classified from the run alone."""
    stmt = (
        select(Failure, WorkflowRun.repo)
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(Failure.job_id == 0)
    )
    return [(failure, repo) for failure, repo in session.execute(stmt)]


def data_stamp(bind: Bind, repo: str) -> str:
    """A value that changes whenever what the reports of ``repo`` read may have changed: a
    collect (its sync_log row, the derived tables it recomputed), a reclassification or rebuild
    (derived_state), a triage action, a change event added or removed, an issue's state read.
    The dashboard keys its cached tables on it, so a table is computed again after a collect
    and never before. One statement of six scalar reads."""
    state, log = DerivedState, TriageLog
    parts = [
        select(func.max(SyncLog.id)).where(SyncLog.repo == repo),
        select(func.max(state.built_at)).where(state.repo == repo),
        select(func.max(log.id)).where(log.repo == repo),
        select(func.count()).select_from(ChangeEvent).where(ChangeEvent.repo == repo),
        select(func.max(ChangeEvent.id)).where(ChangeEvent.repo == repo),
        select(func.max(KnownIssue.checked_at)).where(KnownIssue.repo == repo),
    ]
    with connected(bind) as conn:
        values = conn.execute(select(*(part.scalar_subquery() for part in parts))).one()
    return "|".join(str(value) for value in values)
