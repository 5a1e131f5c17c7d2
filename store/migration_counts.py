"""The one statement of the Migrations page's window tables (before-after, migration-answers,
category-shift, basis-mix): the logical runs around each change event counted by the database,
so that pandas and the statistics only see the counts (analytics.before_after.TALLY_COLUMNS).
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

# (event, side, start, end): runs created in [start, end) are the event's ``side``
Window = tuple[int, str, datetime, datetime]
# (workflow_path, from, to): red runs of that workflow created in [from, to) are ci_config
Invalid = tuple[str, datetime, datetime]


def window_tally(
    bind: Bind,
    where: RunFilter,
    windows: Sequence[Window],
    starts: Sequence[tuple[int, datetime]],
    first_runs: int,
    invalid: Sequence[Invalid],
    config_basis: str,
) -> pd.DataFrame:
    """Per window of ``windows`` and group (workflow_path, logical_outcome, failure_category,
    failure_basis, incident_id: the smallest incident of a red run), ``n`` runs of ``where``;
    and, per event of ``starts`` (event, its date), the first ``first_runs`` counted runs of
    each workflow at or after it, one row each with created_at and run_id (side ``first``).
    Red runs in an ``invalid`` window are ``ci_config`` on ``config_basis`` unless the
    collector found them ci_config already (analytics.outcomes.mark_invalid_windows)."""
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
    parts = []
    if windows:
        bounds = _rows(windows, ("event", "side", "start", "end"))
        around = and_(run.created_at >= bounds.c.start, run.created_at < bounds.c.end)
        keys = [bounds.c.event, bounds.c.side, *groups]
        counted = select(*keys, null().label("created_at"), null().label("run_id"))
        counted = counted.add_columns(func.count().label("n")).select_from(
            joined.join(bounds, around)
        )
        parts.append(filtered(counted, where).group_by(*keys))
    if starts:
        dates = _rows(starts, ("event", "start"))
        rank = func.row_number().over(
            partition_by=(dates.c.event, run.workflow_path), order_by=(run.created_at, run.id)
        )
        ranking = select(
            dates.c.event, *groups, run.created_at, run.id.label("run_id"), rank.label("rank")
        ).select_from(joined.join(dates, run.created_at >= dates.c.start))
        ranked = filtered(ranking.where(logical.logical_outcome != "excluded"), where).subquery()
        columns = [c for c in ranked.c if c.name != "rank"]
        first = select(
            columns[0], literal("first").label("side"), *columns[1:], literal(1).label("n")
        )
        parts.append(first.where(ranked.c.rank <= first_runs))
    if not parts:
        import pandas as pd

        return pd.DataFrame()
    statement = union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    return raw_frame(bind, select(statement), ("created_at",))


def _rows(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> Any:
    """``rows`` as a subquery of literal rows named ``names`` (UNION ALL: SQLite and
    PostgreSQL alike)."""
    selects = [
        select(*(literal(value).label(name) for value, name in zip(row, names, strict=True)))
        for row in rows
    ]
    return (union_all(*selects) if len(selects) > 1 else selects[0]).subquery()
