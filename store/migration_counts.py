"""The one statement of the Migrations page's window tables (before-after, migration-answers,
category-shift, basis-mix): the logical runs around the change events counted by the database,
so that pandas and the statistics only see the counts (analytics.before_after.from_segments).
The same text on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, case, false, func, literal, null, or_, select, union_all

from store.models import IncidentFailure, LogicalRun, WorkflowRun
from store.runfilter import Bind, RunFilter, filtered, raw_frame
from store.vocabulary import RED_OUTCOMES

if TYPE_CHECKING:
    import pandas as pd

SEGMENT_COLUMNS = [
    "segment",
    "side",
    "workflow_path",
    "logical_outcome",
    "failure_category",
    "failure_basis",
    "incident_id",
    "created_at",
    "run_id",
    "n",
]
# (workflow_path, from, to): red runs of that workflow created in [from, to) are ci_config
Invalid = tuple[str, datetime, datetime]


def segment_tally(
    bind: Bind,
    where: RunFilter,
    cuts: Sequence[datetime],
    first_runs: int,
    invalid: Sequence[Invalid],
    config_basis: str,
) -> pd.DataFrame:
    """The runs of ``where`` cut by the sorted times ``cuts`` into segments (``segment`` s:
    created in [cuts[s-1], cuts[s]), the last one open), in one pass over the runs: per
    segment within the cuts and group (workflow_path, logical_outcome, failure_category,
    failure_basis, incident_id: the smallest incident of a red run), ``n`` runs (side
    ``count``); and per segment from the first cut on, the first ``first_runs`` counted runs
    of each workflow, one row each with created_at and run_id (side ``first``). Every window
    around an event is a run of segments (analytics.before_after.from_segments). Red runs in
    an ``invalid`` window are ``ci_config`` on ``config_basis`` unless the collector found
    them ci_config already (analytics.outcomes.mark_invalid_windows)."""
    import pandas as pd

    if not cuts:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    run, logical = WorkflowRun, LogicalRun
    member = (
        select(IncidentFailure.run_id, func.min(IncidentFailure.incident_id).label("incident"))
        .group_by(IncidentFailure.run_id)
        .subquery()
    )
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
    segment = case(
        *((run.created_at < cut, index) for index, cut in enumerate(cuts)), else_=len(cuts)
    ).label("segment")
    groups: list[Any] = [
        run.workflow_path,
        logical.logical_outcome,
        case((marked, "ci_config"), else_=logical.failure_category).label("failure_category"),
        case((marked, config_basis), else_=logical.failure_basis).label("failure_basis"),
        case((red, member.c.incident)).label("incident_id"),
    ]
    joined = logical.__table__.join(run.__table__, run.id == logical.run_id).outerjoin(
        member, member.c.run_id == logical.run_id
    )
    rows = filtered(
        select(segment, *groups, run.created_at, run.id.label("run_id"))
        .select_from(joined)
        .where(run.created_at >= cuts[0]),
        where,
    ).subquery()
    keys = [rows.c.segment, *(rows.c[g.name] for g in groups)]
    counted = (
        select(rows.c.segment, literal("count").label("side"), *keys[1:])
        .add_columns(null().label("created_at"), null().label("run_id"), func.count().label("n"))
        .where(rows.c.segment < len(cuts))
        .group_by(*keys)
    )
    rank = func.row_number().over(
        partition_by=(rows.c.segment, rows.c.workflow_path),
        order_by=(rows.c.created_at, rows.c.run_id),
    )
    ranked = (
        select(*keys, rows.c.created_at, rows.c.run_id, rank.label("rank"))
        .where(rows.c.logical_outcome != "excluded")
        .subquery()
    )
    first = select(
        ranked.c.segment,
        literal("first").label("side"),
        *(ranked.c[g.name] for g in groups),
        ranked.c.created_at,
        ranked.c.run_id,
        literal(1).label("n"),
    ).where(ranked.c.rank <= first_runs)
    return raw_frame(bind, select(union_all(counted, first).subquery()), ("created_at",))
