"""SQL of the Failures page's tables (reports.failure_tables): a repository's classified
failures counted in one statement, and the few rows that are each signature's newest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import BigInteger, and_, case, cast, func, literal_column, select, true

from store.models import Failure, Job, JobLog, WorkflowRun
from store.runfilter import (
    Bind,
    RunFilter,
    Unindexed,
    UTCDayText,
    UTCText,
    as_frame,
    conditions,
    raw_frame,
)

if TYPE_CHECKING:
    import pandas as pd

# What a failure is counted by; all but ``signature`` are empty outside the chosen runs.
COUNT_KEYS = ["chosen", "signature", "day", "category", "evidence", "stage", "log_status"]
COUNT_COLUMNS = [*COUNT_KEYS, "failures", "run_failures", "first_at", "last_at"]


def failure_counts(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """Every failure of ``where.repo`` (None: of every repository) counted once, in one
    statement: those of the runs ``where`` selects (``chosen``) per signature, UTC day of the
    run, category, evidence, stage and log status (of the job's log; empty for a run without
    jobs); the others per signature only, for its first sighting in the whole history.
    Columns COUNT_COLUMNS: ``failures``, ``run_failures`` (those of a run without jobs, job_id
    0), the first and last run's time."""
    run = WorkflowRun
    chosen = and_(true(), *conditions(replace(where, repo=None)))
    # From the failures (fewer than the runs) out to each one's run and log by its key.
    mine = [Unindexed(run.repo) == where.repo] if where.repo is not None else []
    # Grouped first by the keys as stored, the range tested once per failure; the keys outside
    # the chosen runs are then blanked on the few groups (2.9k on the 16x benchmark). Blanked
    # per failure, the range was tested six times a failure: 0.5 s of CPU there, now 0.4.
    stored = [
        case((chosen, 1), else_=0).label("chosen"),
        Failure.signature,
        UTCDayText(run.created_at).label("day"),
        Failure.category,
        Failure.evidence,
        Failure.stage,
        JobLog.status.label("log_status"),
    ]
    grouped = (
        select(
            *stored,
            func.count().label("failures"),
            func.sum(case((Failure.job_id == 0, 1), else_=0)).label("run_failures"),
            func.min(run.created_at).label("first_at"),
            func.max(run.created_at).label("last_at"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(JobLog, JobLog.job_id == Failure.job_id)
        .where(*mine)
        .group_by(*(literal_column(str(i)) for i in range(1, len(stored) + 1)))
        .subquery("stored")
    )
    g = grouped.c
    picked = g.chosen == 1
    keys = [g.chosen, g.signature, *(case((picked, g[c])).label(c) for c in COUNT_KEYS[2:])]
    # Integer sums (PostgreSQL's are numeric: Decimals) and times as UTC text, which the
    # frame takes in at a fraction of the cost of Python's Decimals, dates and datetimes.
    stmt = select(
        *keys,
        cast(func.sum(g.failures), BigInteger).label("failures"),
        cast(func.sum(g.run_failures), BigInteger).label("run_failures"),
        UTCText(func.min(g.first_at)).label("first_at"),
        UTCText(func.max(g.last_at)).label("last_at"),
    ).group_by(*keys)
    counts = raw_frame(bind, stmt, ("day", "first_at", "last_at"))
    return counts.astype({"chosen": bool, "failures": int, "run_failures": int})


def failures_at(bind: Bind, where: RunFilter, times: Sequence[datetime]) -> pd.DataFrame:
    """The failures of ``where``'s runs created at one of ``times`` (each signature's last
    sighting, so a few rows), with what the signature table shows of its newest: columns
    signature, run_id, run_attempt, job_id, created_at, category, rule, line, runner_name,
    html_url (the job's, else the run's). The runs are found by their time alone: the
    repository is checked on the rows read (asked in SQL, it led SQLite to walk every run of
    it: 0.12 s on the 16x benchmark, against 4 ms), the scope is one term no index serves (as
    terms, its branch led SQLite to walk every run of the branch: 3 ms at scale 1, against
    0.5)."""
    run = WorkflowRun
    scope = and_(true(), *conditions(replace(where, repo=None))).self_group()
    stmt = (
        select(
            run.repo,
            Failure.signature,
            Failure.run_id,
            Failure.run_attempt,
            Failure.job_id,
            run.created_at,
            Failure.category,
            Failure.rule,
            Failure.line,
            Job.runner_name,
            func.coalesce(Job.html_url, run.html_url).label("html_url"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Job, Job.id == Failure.job_id)
        .where(run.created_at.in_(times), Unindexed(scope))
    )
    found = as_frame(bind, stmt, ("created_at",))
    mine = found[found["repo"] == where.repo] if where.repo is not None else found
    return mine.drop(columns="repo")
