"""The statements of the Migrations page's tables, the same text on SQLite and PostgreSQL, so
that pandas and the statistics only see counts: the logical runs around the change events
and the first runs of each workflow (the window tables: before-after, migration-answers,
category-shift, basis-mix, analytics.before_after.from_segments; and first-runs, analytics.
successors.first_runs_of_new), the logical jobs either side of each event (coverage-lost)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    and_,
    case,
    cast,
    false,
    func,
    literal,
    or_,
    select,
    union_all,
)

from store import rollups
from store.models import LogicalJob, LogicalRun, RollupJobOutcome, WorkflowRun
from store.runfilter import Bind, RunFilter, Unindexed, filtered, raw_frame
from store.vocabulary import RED_OUTCOMES

if TYPE_CHECKING:
    import pandas as pd

SEGMENT_COLUMNS = [
    "segment",
    "workflow_path",
    "logical_outcome",
    "failure_category",
    "failure_basis",
    "incident_id",
    "created_at",
    "run_id",
    "html_url",
    "n",
    "first_at",
]
# (workflow_path, from, to): red runs of that workflow created in [from, to) are ci_config
Invalid = tuple[str, datetime, datetime]


def segment_of(
    created: Any, cuts: Sequence[datetime] | Sequence[str], low: int = 0, high: int = -1
) -> Any:
    """The number of ``cuts`` (sorted times, or day texts) at or before ``created``, as nested
    CASEs that halve the cuts at each level: a run is compared with log2 of them, not each (a
    flat CASE of forty cuts cost a third of the statement)."""
    high = len(cuts) if high < 0 else high
    if low == high:
        return literal(low)
    mid = (low + high) // 2
    return case(
        (created < cuts[mid], segment_of(created, cuts, low, mid)),
        else_=segment_of(created, cuts, mid + 1, high),
    )


def segment_tally(
    bind: Bind,
    where: RunFilter,
    cuts: Sequence[datetime],
    first_runs: int,
    invalid: Sequence[Invalid],
    config_basis: str,
) -> pd.DataFrame:
    """The runs of ``where`` cut into segments by the sorted times ``cuts`` (``segment`` s:
    created in [cuts[s-1], cuts[s]), the first and last ones open), in one pass over the
    runs: per segment and group (workflow_path, logical_outcome, failure_category,
    failure_basis, incident_id: the smallest incident of a red run), ``n`` runs and
    ``first_at``, the first one's time; the first ``first_runs`` counted runs of each
    workflow in each segment are rows of their own, with created_at, run_id and html_url
    (null on the other rows), and they are the only rows of the last segment. Every window
    around an event is a run of segments (analytics.before_after.from_segments); a
    workflow's first run is its first ``first_at`` and its first runs are the first of its
    segments' (analytics.successors.first_runs_of_new): one pass for both. Red runs in an
    ``invalid`` window are ``ci_config`` on ``config_basis`` unless the collector found them
    ci_config already (analytics.outcomes.mark_invalid_windows)."""
    import pandas as pd

    if not cuts:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    run, logical = WorkflowRun, LogicalRun
    member = rollups.run_incident()
    red = logical.logical_outcome.in_(RED_OUTCOMES)
    inside: ColumnElement[bool] = or_(
        false(),
        *(
            and_(run.workflow_path == path, run.created_at >= start, run.created_at < end)
            for path, start, end in invalid
        ),
    )
    marked = and_(
        red,
        inside,
        or_(logical.failure_category.is_(None), logical.failure_category != "ci_config"),
    )
    groups: list[Any] = [
        run.workflow_path,
        logical.logical_outcome,
        case((marked, "ci_config"), else_=logical.failure_category).label("failure_category"),
        case((marked, config_basis), else_=logical.failure_basis).label("failure_basis"),
        case((red, member.c.incident_id)).label("incident_id"),
    ]
    joined = logical.__table__.join(run.__table__, run.id == logical.run_id).outerjoin(
        member, member.c.run_id == logical.run_id
    )
    counted = (logical.logical_outcome != "excluded").label("counted")
    rows = filtered(
        select(segment_of(run.created_at, cuts).label("segment"), *groups, counted)
        .add_columns(run.created_at, run.id.label("run_id"))
        .select_from(joined),
        where,
    ).subquery()
    rank = func.row_number().over(
        partition_by=(rows.c.segment, rows.c.workflow_path, rows.c.counted),
        order_by=(rows.c.created_at, rows.c.run_id),
    )
    ranked = select(rows, rank.label("rank")).subquery()
    first = and_(ranked.c.counted, ranked.c.rank <= first_runs)
    keys = [
        ranked.c.segment,
        *(ranked.c[g.name] for g in groups),
        case((first, ranked.c.created_at)).label("created_at"),
        case((first, ranked.c.run_id)).label("run_id"),
    ]
    tally = (
        select(*keys, func.count().label("n"), func.min(ranked.c.created_at).label("first_at"))
        .where(or_(ranked.c.segment < len(cuts), first))
        .group_by(*keys)
        .subquery()
    )
    # a first run's address read by its id once counted: carried through the ranking's sort,
    # the addresses cost the statement 0.28 of 0.99 s at 16x
    url = select(run.html_url).where(run.id == tally.c.run_id).scalar_subquery()
    stmt = select(*(tally.c[c] for c in SEGMENT_COLUMNS[:8]), url.label("html_url")).add_columns(
        tally.c.n, tally.c.first_at
    )
    return raw_frame(bind, stmt, ("created_at", "first_at"))


JOB_SEGMENT_COLUMNS = ["segment", "workflow_path", "logical_job", "n", "created_at"]


def job_segments(bind: Bind, where: RunFilter, cuts: Sequence[datetime]) -> pd.DataFrame:
    """The counted (not excluded) logical jobs of ``where`` created within the sorted
    ``cuts``, per segment between them (as segment_tally's), workflow_path and logical_job:
    ``n`` jobs (one per run) and ``created_at``, the last of their runs' times: coverage's
    jobs either side of each event, counted in one statement. The days no cut falls inside
    are read from the rollup of job outcomes when it holds ``where`` (store.rollups), the few others
    from the logical jobs."""
    import pandas as pd

    if len(cuts) < 2:
        return pd.DataFrame(columns=JOB_SEGMENT_COLUMNS)
    run, job = WorkflowRun, LogicalJob
    # The cuts span most of the history: the scope's runs are read from the covering scope
    # index, where a range on the (repo, created_at) one visited each run's row (0.45 -> 0.52 s
    # CPU at 16x).
    when = Unindexed(run.created_at)
    inside = [when >= cuts[0], when < cuts[-1]]
    split = sorted({rollups.midnight(cut) for cut in cuts if not rollups.is_midnight(cut)})
    if rollups.covers(where):  # the split days' runs alone, each day's by its own range
        days = [and_(when >= day, when < day + timedelta(days=1)) for day in split]
        inside.append(or_(false(), *days))
    segment = segment_of(run.created_at, cuts).label("segment")
    jobs = filtered(
        select(segment, run.workflow_path, job.logical_job)
        .add_columns(literal(1).label("n"), run.created_at)
        .select_from(job.__table__.join(run.__table__, run.id == job.run_id))
        .where(*inside)
        .where(job.logical_outcome != "excluded"),
        where,
    )
    both = union_all(jobs, _whole_days(where, cuts, split)) if rollups.covers(where) else jobs
    rows = both.subquery("rows")
    keys = [rows.c.segment, rows.c.workflow_path, rows.c.logical_job]
    stmt = select(
        *keys,
        cast(func.sum(rows.c.n), BigInteger).label("n"),
        func.max(rows.c.created_at).label("created_at"),
    ).group_by(*keys)
    return raw_frame(bind, stmt, ("created_at",))


def _whole_days(where: RunFilter, cuts: Sequence[datetime], split: Sequence[datetime]) -> Any:
    """job_segments' rows of the days within the cuts that none splits, from the rollup of job
    outcomes: a day's segment is that of its midnight, the number of cuts at or before it,
    which is the number whose first whole day (their own if a midnight, else the next) is not
    after it."""
    r = RollupJobOutcome
    first = [rollups.first_whole_day(cut) for cut in cuts]
    stmt = (
        select(segment_of(r.day, first).label("segment"), r.workflow_path, r.logical_job)
        .add_columns(r.n, r.last_at.label("created_at"))
        .where(r.day >= first[0], r.day < rollups.day_text(cuts[-1]))
        .where(r.day.not_in([rollups.day_text(day) for day in split]))
        .where(r.logical_outcome != "excluded")
    )
    return rollups.within(stmt, r, where)


def last_runs(
    bind: Bind, where: RunFilter, jobs: Sequence[tuple[str, str, datetime]]
) -> pd.DataFrame:
    """The runs of ``where`` of each (workflow_path, logical_job, created_at) of ``jobs`` that
    ran that logical job (not excluded) at that time: workflow_path, logical_job, created_at,
    run_id, html_url; a few rows, to link the last run of a lost job."""
    import pandas as pd

    columns = ["workflow_path", "logical_job", "created_at", "run_id", "html_url"]
    if not jobs:
        return pd.DataFrame(columns=columns)
    run, job = WorkflowRun, LogicalJob
    chosen = or_(
        *(
            and_(run.workflow_path == path, job.logical_job == name, run.created_at == at)
            for path, name, at in jobs
        )
    )
    # the times alone too: an index finds those runs, where the OR above scans every job
    at_times = run.created_at.in_(sorted({at for _, _, at in jobs}))
    stmt = filtered(
        select(run.workflow_path, job.logical_job, run.created_at, run.id.label("run_id"))
        .add_columns(run.html_url)
        .select_from(job.__table__.join(run.__table__, run.id == job.run_id))
        .where(at_times, chosen, job.logical_outcome != "excluded"),
        where,
    )
    return raw_frame(bind, stmt, ("created_at",))
