"""The Overview's counts, each one aggregated statement over the derived tables (logical runs
and jobs, the first incident of each run): a few thousand rows, however many runs there are;
and the status tiles' runs, every one but with only the few columns a tile reads.
What depends on the configuration (lineages, invalid windows) is applied by the caller on
these counts, or passed in as parameters. The same text runs on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, and_, case, cast, func, literal, select, union_all

from store import rollups
from store.models import IncidentFailure, LogicalJob, LogicalRun, RollupRun, WorkflowRun
from store.runfilter import (
    Bind,
    DayDate,
    RunFilter,
    Unindexed,
    UTCDay,
    UTCText,
    connected,
    filtered,
    raw_frame,
    selects_run,
)
from store.vocabulary import COUNTED_OUTCOMES, RED_OUTCOMES

if TYPE_CHECKING:
    import pandas as pd

RUN_COUNT_KEYS = ["workflow_path", "day", "logical_outcome", "incident_id", "in_range"]
JOB_DAY_KEYS = ["logical_job", "day", "logical_outcome", "category", "invalid"]
COMPOUND_PATHS = 400  # workflows per statement of latest_counted (SQLite: 500 terms at most)


def _in_range(created: Any, since: Any, until: Any) -> Any:
    """1 for a run created (or a rollup's ``day``) in [since, until), else 0."""
    terms = [created >= since] if since is not None else []
    terms += [created < until] if until is not None else []
    return case((and_(*terms), 1), else_=0) if terms else literal(1)


def run_counts(
    bind: Bind, where: RunFilter, since: datetime | None, until: datetime | None
) -> pd.DataFrame:
    """Logical runs of ``where`` (every date) per workflow_path, UTC day, logical_outcome, the
    incident of a red run (the smallest id among its failures'; None otherwise) and
    ``in_range`` (1: created in [since, until)): ``runs``. Columns RUN_COUNT_KEYS, runs.
    From the rollup of runs when it holds ``where`` and the range (whole days)."""
    if rollups.covers(where) and rollups.covers(RunFilter(since=since, until=until)):
        r = RollupRun
        ends = [None if end is None else rollups.day_text(end) for end in (since, until)]
        keys = [
            r.workflow_path,
            DayDate(r.day).label("day"),
            r.logical_outcome,
            r.incident_id,
            _in_range(r.day, *ends).label("in_range"),
        ]
        rolled = select(*keys, cast(func.sum(r.runs), BigInteger).label("runs")).group_by(*keys)
        stmt = rollups.within(rolled.order_by(*keys), RollupRun, where)
        return raw_frame(bind, stmt, ("day",))
    first = rollups.run_incident()
    run = WorkflowRun
    keys = [
        run.workflow_path,
        UTCDay(run.created_at).label("day"),
        LogicalRun.logical_outcome,
        case((LogicalRun.logical_outcome.in_(RED_OUTCOMES), first.c.incident_id)).label(
            "incident_id"
        ),
        _in_range(run.created_at, since, until).label("in_range"),
    ]
    stmt = (
        select(*keys, func.count().label("runs"))
        .join(LogicalRun, LogicalRun.run_id == run.id)
        .outerjoin(first, first.c.run_id == run.id)
        .group_by(*keys)
        .order_by(*keys)
    )
    return raw_frame(bind, filtered(stmt, where), ("day",))


def job_day_counts(
    bind: Bind, where: RunFilter, windows: Sequence[tuple[str, datetime, datetime]]
) -> pd.DataFrame:
    """Counted logical jobs of ``where`` (not excluded) per logical_job, UTC day,
    logical_outcome, category and ``invalid`` (1: created in one of ``windows``, (workflow_path,
    from, to) spans of an invalid workflow file): ``runs`` and ``last_at``, the latest
    creation time. Columns JOB_DAY_KEYS, runs, last_at."""
    run = WorkflowRun
    spans = [
        (and_(run.workflow_path == path, run.created_at >= start, run.created_at < end), 1)
        for path, start, end in windows
    ]
    keys = [
        LogicalJob.logical_job,
        UTCDay(run.created_at).label("day"),
        LogicalJob.logical_outcome,
        LogicalJob.category,
        (case(*spans, else_=0) if spans else literal(0)).label("invalid"),
    ]
    stmt = (
        select(*keys, func.count().label("runs"), func.max(run.created_at).label("last_at"))
        .join(LogicalJob, LogicalJob.run_id == run.id)
        .where(LogicalJob.logical_outcome != "excluded")
        .group_by(*keys)
        .order_by(*keys)
    )
    return raw_frame(bind, filtered(stmt, where), ("day", "last_at"))


def incident_workflows(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """Each incident with a failure in a run of ``where``, and each workflow_path it hit
    there. Columns incident_id, workflow_path. Read from the members (a few) out to their
    runs, each by its key."""
    member = IncidentFailure
    run = WorkflowRun
    path = select(run.workflow_path).where(run.id == member.run_id).scalar_subquery()
    stmt = (
        select(member.incident_id, path.label("workflow_path"))
        .where(selects_run(member.run_id, where))
        .distinct()
        .order_by(member.incident_id, "workflow_path")
    )
    return raw_frame(bind, stmt)


def tile_runs(bind: Bind, where: RunFilter, outcomes_after: datetime | None) -> pd.DataFrame:
    """The logical runs of ``where`` with only what a status tile reads of each (run_id,
    workflow_path, created_at, event, head_sha, logical_outcome): the status reads every run
    of the range (STALE's usual gap), and their other columns (the web address above all)
    cost more to fetch than the rest of the tile. ``logical_outcome`` only for the runs
    created after ``outcomes_after`` (the tiles' two windows; None: every run's), else None:
    looked up run by run only there, where a join read every run's logical row (0.30 -> 0.15 s
    at 16x on SQLite)."""
    run = WorkflowRun
    outcome: Any = (
        select(LogicalRun.logical_outcome).where(LogicalRun.run_id == run.id).scalar_subquery()
    )
    if outcomes_after is not None:
        outcome = case((run.created_at > outcomes_after, outcome), else_=None)
    stmt = select(
        run.id.label("run_id"),
        run.workflow_path,
        UTCText(run.created_at).label("created_at"),  # text: a tenth of the cost to take in
        run.event,
        run.head_sha,
        outcome.label("logical_outcome"),
    )
    if where.branch is None:
        return raw_frame(bind, filtered(stmt, where), ("created_at",))
    # A branch's runs come from the scope index alone, which holds every column read here: a
    # range on the (repo, created_at) one, which SQLite prefers, visited each run's wide row
    # (0.69 -> 0.35 s CPU at 16x over the whole history).
    when = Unindexed(run.created_at)
    dates = [when >= where.since] if where.since is not None else []
    dates += [when < where.until] if where.until is not None else []
    stmt = filtered(stmt.where(*dates), replace(where, since=None, until=None))
    return raw_frame(bind, stmt, ("created_at",))


def latest_counted(bind: Bind, where: RunFilter, paths: Sequence[str], k: int) -> pd.DataFrame:
    """The ``k`` newest counted logical runs of ``where`` of each of ``paths`` (at least one):
    run_id, logical_outcome. For the few workflows whose status hangs on a run older than the
    tiles' windows, each an index walk back from its newest run; SQLite takes at most 500
    terms in one UNION ALL, so a statement asks for COMPOUND_PATHS of them."""
    import pandas as pd

    run = WorkflowRun
    frames = []
    for at in range(0, len(paths), COMPOUND_PATHS):
        newest = [
            filtered(
                select(run.id.label("run_id"), LogicalRun.logical_outcome)
                .join(LogicalRun, LogicalRun.run_id == run.id)
                .where(run.workflow_path == path, LogicalRun.logical_outcome.in_(COUNTED_OUTCOMES))
                .order_by(run.created_at.desc(), run.id.desc())
                .limit(k),
                where,
            ).subquery()
            for path in paths[at : at + COMPOUND_PATHS]
        ]
        every = union_all(*(select(*sub.c) for sub in newest)).subquery()
        frames.append(raw_frame(bind, select(*every.c)))
    return pd.concat(frames, ignore_index=True)


def run_urls(bind: Bind, run_ids: Sequence[int]) -> dict[int, str | None]:
    """The web address of each of ``run_ids`` (a tile's newest run)."""
    stmt = select(WorkflowRun.id, WorkflowRun.html_url).where(WorkflowRun.id.in_(run_ids))
    with connected(bind) as conn:
        return {run_id: url for run_id, url in conn.execute(stmt)}
