"""SQL of the incidents tables (``incidents``, ``incident_failures``): replace a repository's
incidents, and read them back for the pages, the export and the summary. Which failures make an
incident is decided by analytics.incidents; this module only stores and loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, delete, select

from store.models import Incident, IncidentFailure, WorkflowRun
from store.runfilter import Bind, RunFilter, as_frame, filtered
from store.upsert import upsert

if TYPE_CHECKING:
    import pandas as pd

INCIDENT_COLUMNS = [
    "id",
    "repo",
    "kind",
    "category",
    "signature",
    "runner",
    "label",
    "started_at",
    "ended_at",
    "jobs",
    "runs",
    "workflows",
]
MEMBER_COLUMNS = ["run_id", "run_attempt", "job_id", "incident_id"]


def replace(
    conn: Connection,
    repo: str,
    incidents: Sequence[Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
) -> None:
    """``repo``'s incidents become ``incidents`` (rows of INCIDENT_COLUMNS) and their failures
    ``members`` (rows of MEMBER_COLUMNS), in ``conn``'s transaction."""
    ids = select(Incident.id).where(Incident.repo == repo)
    conn.execute(delete(IncidentFailure).where(IncidentFailure.incident_id.in_(ids)))
    conn.execute(delete(Incident).where(Incident.repo == repo))
    upsert(conn, Incident, incidents)
    upsert(conn, IncidentFailure, members)


def _incidents() -> Select[*tuple[Any, ...]]:
    """Every incident's INCIDENT_COLUMNS, oldest first."""
    columns = (getattr(Incident, c) for c in INCIDENT_COLUMNS)
    return select(*columns).order_by(Incident.started_at, Incident.id)


def load_incidents(
    bind: Bind,
    repo: str | None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """The incidents of ``repo`` (None: every repository) that overlap [since, until), oldest
    first; columns INCIDENT_COLUMNS, times tz-aware UTC."""
    stmt = _incidents()
    if repo is not None:
        stmt = stmt.where(Incident.repo == repo)
    if since is not None:
        stmt = stmt.where(Incident.ended_at >= since)
    if until is not None:
        stmt = stmt.where(Incident.started_at < until)
    return as_frame(bind, stmt, ("started_at", "ended_at"))


def load_members(bind: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """The failures that belong to an incident, of the runs ``where`` selects; columns
    MEMBER_COLUMNS."""
    member = IncidentFailure
    stmt = select(member.run_id, member.run_attempt, member.job_id, member.incident_id).join(
        WorkflowRun, WorkflowRun.id == member.run_id
    )
    return as_frame(bind, filtered(stmt, where))


def incidents_hitting(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """The incidents with a failure in a run ``where`` selects (the pages' and the summary's
    dates, workflows and scope), oldest first; columns INCIDENT_COLUMNS, times UTC."""
    member = IncidentFailure
    hit = filtered(
        select(member.incident_id).join(WorkflowRun, WorkflowRun.id == member.run_id), where
    )
    return as_frame(bind, _incidents().where(Incident.id.in_(hit)), ("started_at", "ended_at"))
