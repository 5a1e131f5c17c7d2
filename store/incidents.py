"""SQL of the incidents tables (``incidents``, ``incident_failures``): replace a repository's
incidents, and read them back for the pages, the export and the summary. Which failures make an
incident is decided by analytics.incidents; this module only stores and loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, String, and_, delete, func, or_, select, type_coerce

from store.frame_queries import label_tuples
from store.models import Failure, Incident, IncidentFailure, Job, WorkflowRun
from store.runfilter import Bind, RunFilter, as_frame, conclusion, filtered, raw_frame
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
CHUNK = 2_000  # rows per insert: far below SQLite's and psycopg's limits of bound parameters
SPAN_CHUNK = 200  # spans per query of exposed_jobs, as store.derived's CHUNK of run ids


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
    for start in range(0, len(members), CHUNK):
        upsert(conn, IncidentFailure, members[start : start + CHUNK])


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
    # Each member's run checked by its key, as in incidents_hitting: a join walked every run.
    chosen = filtered(select(WorkflowRun.id).where(WorkflowRun.id == member.run_id), where)
    stmt = select(member.run_id, member.run_attempt, member.job_id, member.incident_id)
    return as_frame(bind, stmt.where(chosen.exists()))


def incidents_hitting(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """The incidents with a failure in a run ``where`` selects (the pages' and the summary's
    dates, workflows and scope), oldest first; columns INCIDENT_COLUMNS, times UTC."""
    member = IncidentFailure
    # Each member's run checked by its key (EXISTS): a join let SQLite walk every run of the
    # repository first, 0.17 s on the 16x benchmark database against 1 ms.
    chosen = filtered(select(WorkflowRun.id).where(WorkflowRun.id == member.run_id), where)
    hit = select(member.incident_id).where(chosen.exists())
    return as_frame(bind, _incidents().where(Incident.id.in_(hit)), ("started_at", "ended_at"))


def _started() -> Any:
    """When a job attempt started (else was created, else its run was)."""
    return func.coalesce(Job.started_at, Job.created_at, WorkflowRun.created_at)


def _job_facts() -> list[Any]:
    """What detection knows of a job attempt: its run, when it started, its runner and
    labels, its workflow and name."""
    return [
        Job.run_id,
        Job.run_attempt,
        Job.id.label("job_id"),
        _started().label("at"),
        Job.runner_name,
        type_coerce(Job.labels, String).label("labels"),
        WorkflowRun.workflow_path,
        Job.name,
    ]


def _frame(bind: Bind, stmt: Any) -> pd.DataFrame:
    frame = raw_frame(bind, stmt, ("at",))
    return frame.assign(labels=label_tuples(frame["labels"]))


def incident_failures(bind: Bind, repo: str) -> pd.DataFrame:
    """Every failed job attempt of ``repo`` (not the run-level failures of runs without jobs),
    with its category, signature and deciding line and the job's facts (``_job_facts``)."""
    stmt = (
        select(*_job_facts(), Failure.category, Failure.signature, Failure.line)
        .join(Failure, and_(Failure.job_id == Job.id, Failure.run_id == Job.run_id))
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(WorkflowRun.repo == repo)
        .order_by(Job.run_id, Job.run_attempt, Job.id)
    )
    return _frame(bind, stmt)


def exposed_jobs(bind: Bind, repo: str, spans: Sequence[tuple[datetime, datetime]]) -> pd.DataFrame:
    """The job attempts of ``repo`` that started within one of ``spans`` (at least one) and
    went green or red (not skipped or cancelled), with their facts (``_job_facts``), each
    once. SPAN_CHUNK spans per query: SQLite refuses an expression of 1,000 terms."""
    import pandas as pd

    at = _started()
    stmt = (
        select(*_job_facts())
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(WorkflowRun.repo == repo)
        .where(conclusion(Job).in_(("success", "failure", "timed_out")))
    )
    frames = [
        _frame(bind, stmt.where(or_(*(at.between(a, b) for a, b in spans[i : i + SPAN_CHUNK]))))
        for i in range(0, len(spans), SPAN_CHUNK)
    ]
    found = [frame for frame in frames if not frame.empty] or frames[:1]  # keeps the dtypes
    jobs = pd.concat(found, ignore_index=True)
    return jobs.drop_duplicates(["run_id", "run_attempt", "job_id"], ignore_index=True)
