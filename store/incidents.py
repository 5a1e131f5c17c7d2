"""SQL of the incidents tables (``incidents``, ``incident_failures``): replace a repository's
incidents, and read them back for the pages, the export and the summary. Which failures make an
incident is decided by analytics.incidents; this module only stores and loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, String, and_, delete, func, or_, select, type_coerce

from store import rollups
from store.frame_queries import label_tuples
from store.models import Failure, Incident, IncidentFailure, Job, WorkflowRun
from store.runfilter import (
    Bind,
    RunFilter,
    as_frame,
    conclusion,
    connected,
    raw_frame,
    selects_run,
)
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


Spans = Sequence[tuple[datetime, datetime]]


def replace(
    conn: Connection,
    repo: str,
    incidents: Sequence[Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
    spans: Spans | None = None,
) -> None:
    """``repo``'s incidents become ``incidents`` (rows of INCIDENT_COLUMNS) and their failures
    ``members`` (rows of MEMBER_COLUMNS), in ``conn``'s transaction; given ``spans``, only its
    incidents that overlap one of them are replaced. The rollups of the days of the runs whose
    failures left or joined an incident are counted again (their incident ids)."""
    stale = Incident.repo == repo
    touched: set[int] = set()
    for start in range(0, len(spans or ()), SPAN_CHUNK):
        chunk = (spans or ())[start : start + SPAN_CHUNK]
        overlap = or_(*(and_(Incident.started_at <= b, Incident.ended_at >= a) for a, b in chunk))
        touched.update(_delete(conn, and_(stale, overlap)))
    if spans is None:
        touched.update(_delete(conn, stale))
    upsert(conn, Incident, incidents)
    for start in range(0, len(members), CHUNK):
        upsert(conn, IncidentFailure, members[start : start + CHUNK])
    touched.update(int(member["run_id"]) for member in members)
    rollups.refresh(conn, sorted(touched))


def _delete(conn: Connection, which: Any) -> list[int]:
    """Delete the incidents ``which`` selects, and their failures; returns the runs of those."""
    ids = select(Incident.id).where(which)
    gone = IncidentFailure.incident_id.in_(ids)
    runs = list(conn.scalars(select(IncidentFailure.run_id).where(gone).distinct()))
    conn.execute(delete(IncidentFailure).where(gone))
    conn.execute(delete(Incident).where(which))
    return runs


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
    stmt = select(member.run_id, member.run_attempt, member.job_id, member.incident_id)
    return as_frame(bind, stmt.where(selects_run(member.run_id, where)))


def incidents_hitting(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """The incidents with a failure in a run ``where`` selects (the pages' and the summary's
    dates, workflows and scope), oldest first; columns INCIDENT_COLUMNS, times UTC."""
    member = IncidentFailure
    # A join let SQLite walk every run of the repository first: 0.17 s at 16x against 1 ms.
    hit = select(member.incident_id).where(selects_run(member.run_id, where))
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


def _failed(repo: str, *columns: Any) -> Select[*tuple[Any, ...]]:
    """``columns`` of every failed job attempt of ``repo`` (not the run-level failures of runs
    without jobs)."""
    return (
        select(*columns)
        .join(Failure, and_(Failure.job_id == Job.id, Failure.run_id == Job.run_id))
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .where(WorkflowRun.repo == repo)
    )


def _within(spans: Spans) -> Any:
    at = _started()
    return or_(*(at.between(a, b) for a, b in spans))


def incident_failures(bind: Bind, repo: str, spans: Spans | None = None) -> pd.DataFrame:
    """Every failed job attempt of ``repo`` (given ``spans``: that started within one of
    them), with its category, signature and deciding line and the job's facts
    (``_job_facts``)."""
    import pandas as pd

    stmt = _failed(repo, *_job_facts(), Failure.category, Failure.signature, Failure.line)
    stmt = stmt.order_by(Job.run_id, Job.run_attempt, Job.id)
    if spans is None:
        return _frame(bind, stmt)
    frames = [
        _frame(bind, stmt.where(_within(spans[i : i + SPAN_CHUNK])))
        for i in range(0, max(len(spans), 1), SPAN_CHUNK)
    ]
    found = [frame for frame in frames if not frame.empty] or frames[:1]  # keeps the dtypes
    return pd.concat(found, ignore_index=True).sort_values(
        ["run_id", "run_attempt", "job_id"], ignore_index=True
    )


def failure_starts(bind: Bind, repo: str) -> pd.Series:
    """When each failed job attempt of ``repo`` started (as ``incident_failures``' ``at``)."""
    return raw_frame(bind, _failed(repo, _started().label("at")), ("at",))["at"]


def touched_by(bind: Bind, run_ids: Sequence[int]) -> tuple[pd.Series, list[tuple[Any, Any]]]:
    """What ``run_ids`` can change of the incidents: when each of their job attempts started,
    and the spans of the stored incidents that hold one of their failures."""
    import pandas as pd

    starts: list[pd.Series] = []
    spans: list[tuple[Any, Any]] = []
    member = IncidentFailure
    for i in range(0, len(run_ids), SPAN_CHUNK):
        chunk = run_ids[i : i + SPAN_CHUNK]
        jobs = select(_started().label("at")).join(WorkflowRun, WorkflowRun.id == Job.run_id)
        starts.append(raw_frame(bind, jobs.where(Job.run_id.in_(chunk)), ("at",))["at"])
        held = select(member.incident_id).where(member.run_id.in_(chunk))
        stmt = select(Incident.started_at, Incident.ended_at).where(Incident.id.in_(held))
        with connected(bind) as conn:
            spans += [(a, b) for a, b in conn.execute(stmt)]
    return pd.concat(starts, ignore_index=True) if starts else pd.Series(), spans


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
