"""Reads of the dashboard's pages, the summary and the export that are not frames: daily
counts, spans, signatures, failure details, a stored log."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import BigInteger, ColumnElement, Engine, ScalarSelect, cast, func, select, tuple_

from store import rollups
from store.models import (
    Base,
    Correction,
    Failure,
    Job,
    JobLog,
    RollupJobName,
    WorkflowRun,
)
from store.runfilter import (
    DayDate,
    RunFilter,
    UTCDay,
    as_frame,
    conclusion,
    filtered,
    raw_frame,
    utc,
)
from store.triage import decisions

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd


def stored_runs(engine: Engine) -> int:
    """How many workflow runs the database holds: what a night added, told in its summary."""
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(WorkflowRun)) or 0


def table_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            name: conn.scalar(select(func.count()).select_from(table)) or 0
            for name, table in sorted(Base.metadata.tables.items())
        }


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
    return as_frame(engine, filtered(stmt, where), ("day",))


def daily_job_presence(
    engine: Engine, where: RunFilter = RunFilter(), *, rolled: bool = False
) -> pd.DataFrame:
    """Per workflow, UTC day and job name: how many runs had a job of that name in their first
    attempt, counted in SQL (when each job joined or left a workflow, without loading jobs).
    ``rolled`` (the derived tables are current): from the rollup of job names when it holds
    ``where``.

    Columns: workflow_path, day (tz-aware UTC midnight), name, runs."""
    if rolled and rollups.covers(where):
        r = RollupJobName
        keys = [r.workflow_path, DayDate(r.day).label("day"), r.name]
        rows = select(*keys, cast(func.sum(r.runs), BigInteger).label("runs")).group_by(*keys)
        return raw_frame(engine, rollups.within(rows.order_by(*keys), r, where), ("day",))
    run = WorkflowRun
    day = UTCDay(run.created_at).label("day")
    stmt = (
        select(run.workflow_path, day, Job.name, func.count(func.distinct(run.id)).label("runs"))
        .join(Job, Job.run_id == run.id)
        .where(Job.run_attempt == 1)
        .group_by(run.workflow_path, day, Job.name)
        .order_by(run.workflow_path, day, Job.name)
    )
    return raw_frame(engine, filtered(stmt, where), ("day",))


def run_span(engine: Engine, repo: str) -> tuple[datetime | None, datetime | None]:
    """The creation times of a repository's oldest and newest stored run: each its own
    subquery, so that SQLite reads each from one end of the (repo, created_at) index (it does
    that for a lone min or max; both in one select walked every run: 0.09 s at 16x)."""
    run = WorkflowRun

    def end(time: ColumnElement[datetime]) -> ScalarSelect[datetime]:
        return select(time).where(run.repo == repo).scalar_subquery()

    stmt = select(end(func.min(run.created_at)), end(func.max(run.created_at)))
    with engine.connect() as conn:
        oldest, newest = conn.execute(stmt).one()
    return utc(oldest), utc(newest)


def latest_run_url(engine: Engine, repo: str) -> str | None:
    """The web address of the newest run: its host tells GitHub from a local replica."""
    run = WorkflowRun
    stmt = select(run.html_url).where(run.repo == repo).order_by(run.created_at.desc()).limit(1)
    with engine.connect() as conn:
        return conn.scalar(stmt)


def signature_summary(engine: Engine, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """One row per failure signature seen in the selected runs, aggregated in SQL.

    Columns: signature, category, rule, failures, jobs, first_seen_here, last_seen (in the
    selection), first_seen (in the repository's whole history), and of the newest failure:
    line, job_id, runner_name, html_url (the job's, else the run's); the signature's known
    issue in ``where.repo`` (issue_url, issue_number, issue_state: GitHub's as last read; empty
    when unlinked) and correction_note (a maintainer's correction's, else empty)."""
    import pandas as pd

    run = WorkflowRun
    counted = filtered(
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
    # The newest failure of each signature is ranked on its key alone; only the winners'
    # line, rule, runner and link are read: ranking the wide rows joined to their jobs took
    # 2.0 s for this query on the 16x benchmark database (SQLite), against 1.0 s. Newest: the
    # latest run, then the highest job id (a job's own failure before its run's, job 0), then
    # the latest attempt, then the highest run id: a total order, so no tie is left to chance.
    newest = func.row_number().over(
        partition_by=Failure.signature,
        order_by=(
            run.created_at.desc(),
            Failure.job_id.desc(),
            Failure.run_attempt.desc(),
            Failure.run_id.desc(),
        ),
    )
    ranked = filtered(
        select(Failure.run_id, Failure.run_attempt, Failure.job_id, newest.label("rank")).join(
            run, run.id == Failure.run_id
        ),
        where,
    ).subquery()
    winners = select(ranked.c.run_id, ranked.c.run_attempt, ranked.c.job_id).where(
        ranked.c.rank == 1
    )
    latest = (
        select(
            Failure.signature,
            Failure.category,
            Failure.rule,
            Failure.line,
            Failure.job_id,
            Job.runner_name,
            func.coalesce(Job.html_url, run.html_url).label("html_url"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Job, Job.id == Failure.job_id)
        .where(tuple_(Failure.run_id, Failure.run_attempt, Failure.job_id).in_(winners))
    )
    times = ("first_seen_here", "last_seen", "first_seen")
    frame = as_frame(engine, counted).merge(
        as_frame(engine, ever.group_by(Failure.signature)), on="signature", how="left"
    )
    frame = frame.merge(as_frame(engine, latest), on="signature", how="left")
    frame = frame.merge(signature_triage(engine, where.repo), on="signature", how="left")
    frame["issue_number"] = frame["issue_number"].astype("Int64")
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    return frame.sort_values("failures", ascending=False, kind="stable").reset_index(drop=True)


def signature_triage(engine: Engine, repo: str | None) -> pd.DataFrame:
    """The signatures of ``repo`` linked to a known issue or corrected: signature, issue_url,
    issue_number, issue_state (GitHub's as last read), correction_note."""
    decided = decisions(repo).subquery()
    triage = select(
        decided.c.signature,
        decided.c.url.label("issue_url"),
        decided.c.issue_number,
        decided.c.state.label("issue_state"),
        decided.c.correction_note,
    )
    return as_frame(engine, triage)


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
    (the job's, else the run's), log_status, evidence, stage, classifier_category and
    classifier_evidence (the classifier's own answer), correction_note (a maintainer's, when
    evidence is "maintainer")."""
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
            Failure.classifier_category,
            Failure.classifier_evidence,
            Correction.note.label("correction_note"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Job, Job.id == Failure.job_id)
        .outerjoin(JobLog, JobLog.job_id == Failure.job_id)
        .outerjoin(
            Correction,
            (Correction.repo == run.repo) & (Correction.signature == Failure.signature),
        )
        .order_by(run.created_at.desc(), Failure.job_id.desc())
    )
    if signature is not None:
        stmt = stmt.where(Failure.signature == signature)
    if limit is not None:
        stmt = stmt.limit(limit)
    return as_frame(engine, filtered(stmt, where), ("created_at",))


def job_log(engine: Engine, job_id: int) -> tuple[bytes, str | None] | None:
    """The archived log of one job as stored (content, compression), or None."""
    stmt = select(JobLog.content, JobLog.compression).where(
        JobLog.job_id == job_id, JobLog.status == "ok"
    )
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    return None if row is None or row[0] is None else (row[0], row[1])
