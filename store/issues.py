"""What ``ciflake triage --post`` reads and records: the default branch's failures it counts,
the issues it filed or refreshed (``KnownIssue`` rows of source "ciflake", GitHub's state of
every linked issue), and the lease that lets one process post for a repository at a time."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Engine, delete, func, select, type_coerce, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.types import String

from store.models import Failure, Job, KnownIssue, Lease, TriageLog, Workflow, WorkflowRun
from store.runfilter import Bind, RunFilter, as_frame, filtered, raw_frame

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd

CIFLAKE = "ciflake"  # KnownIssue.source of the issues triage --post filed


def triage_failures(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """The failures of the runs ``where`` selects, one row per failed job (or run), with what
    the issue body counts them by. Columns: signature, category, line, run_id, run_attempt,
    job_id, created_at (the run's), workflow_name, job_name, runner_name, html_url (the
    job's, else the run's)."""
    run = WorkflowRun
    stmt = (
        select(
            Failure.signature,
            Failure.category,
            Failure.line,
            Failure.run_id,
            Failure.run_attempt,
            Failure.job_id,
            run.created_at,
            func.coalesce(Workflow.name, run.name, run.workflow_path).label("workflow_name"),
            Job.name.label("job_name"),
            Job.runner_name,
            func.coalesce(Job.html_url, run.html_url).label("html_url"),
        )
        .join(run, run.id == Failure.run_id)
        .outerjoin(Workflow, Workflow.id == run.workflow_id)
        .outerjoin(Job, Job.id == Failure.job_id)
        .order_by(run.created_at, Failure.run_id, Failure.job_id)
    )
    return raw_frame(bind, filtered(stmt, where), ("created_at",))


def latest_context(bind: Bind, repo: str, signature: str) -> list[str]:
    """The log lines around the deciding line of ``signature``'s latest failure."""
    stmt = (
        select(type_coerce(Failure.context, String))
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(WorkflowRun.repo == repo, Failure.signature == signature)
        .order_by(WorkflowRun.created_at.desc(), Failure.job_id.desc())
        .limit(1)
    )
    import json

    with Session(bind) as session:
        text = session.scalar(stmt)
    value: Any = json.loads(text) if isinstance(text, str) else text
    return [str(line) for line in value or []]


def links(bind: Bind, repo: str) -> pd.DataFrame:
    """Every known issue of ``repo`` with every column of ``KnownIssue``."""
    columns = [c for c in KnownIssue.__table__.columns]
    stmt = select(*columns).where(KnownIssue.repo == repo).order_by(KnownIssue.signature)
    return as_frame(bind, stmt, ("set_at", "closed_at", "checked_at"))


def filed_since(bind: Bind, repo: str, since: datetime) -> int:
    """How many issues triage filed for ``repo`` since ``since`` (the nightly cap counts them)."""
    stmt = select(func.count()).where(
        TriageLog.repo == repo, TriageLog.action == "filed", TriageLog.at >= since
    )
    with Session(bind) as session:
        return int(session.scalar(stmt) or 0)


def _when(value: object) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def github_state(issue: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The KnownIssue columns GitHub's answer for an issue sets."""
    return {
        "state": issue.get("state"),
        "state_reason": issue.get("state_reason"),
        "closed_at": _when(issue.get("closed_at")),
        "closed_by": ((issue.get("closed_by") or {}).get("login")),
        "checked_at": now,
    }


def linked_numbers(bind: Bind, repo: str) -> dict[str, int]:
    """The number of each signature's linked issue in ``repo`` itself (people's links too):
    the issues whose state triage --post reads from GitHub."""
    stmt = select(KnownIssue.signature, KnownIssue.issue_number).where(
        KnownIssue.repo == repo, KnownIssue.issue_repo == repo
    )
    with Session(bind) as session:
        rows = session.execute(stmt).all()
    return {str(signature): number for signature, number in rows if number}


def record_state(
    bind: Bind, repo: str, signature: str, issue: dict[str, Any], now: datetime
) -> None:
    """Record GitHub's state of ``signature``'s linked issue, if the link is still there."""
    with Session(bind) as session, session.begin():
        row = session.get(KnownIssue, (repo, signature))
        if row is not None:
            for key, value in github_state(issue, now).items():
                setattr(row, key, value)


def record_issue(
    session: Session,
    repo: str,
    signature: str,
    issue: dict[str, Any],
    *,
    actor: str,
    now: datetime,
    body_sha256: str | None = None,
) -> None:
    """Record the issue ciflake filed for (or adopted for) ``signature``, or its new state."""
    row = session.get(KnownIssue, (repo, signature))
    if row is None:
        row = KnownIssue(repo=repo, signature=signature, source=CIFLAKE, set_by=actor, set_at=now)
        row.note = "filed by ciflake triage --post"
    row.url = str(issue.get("html_url") or row.url)
    row.issue_repo, row.issue_number = repo, int(issue["number"])
    for key, value in github_state(issue, now).items():
        setattr(row, key, value)
    if body_sha256 is not None:
        row.body_sha256 = body_sha256
    session.add(row)


# ---- the lease: one triage --post per repository at a time --------------------------------------


def holder_id() -> str:
    """This process as a lease holder: host:pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _dead_here(holder: str) -> bool:
    """Whether ``holder`` is a process of this host that no longer runs."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def take_lease(engine: Engine, name: str, holder: str, ttl: timedelta) -> str | None:
    """Take the lease ``name`` for ``holder`` for ``ttl``: None when taken, else who holds it.
    An expired lease, or one whose holder died on this host, is taken over; a race for a free
    lease is settled by the primary key (the loser sees the winner)."""
    now = datetime.now(UTC)
    with Session(engine) as session, session.begin():
        row = session.get(Lease, name, with_for_update=True)
        if row is not None:
            expires = (
                row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
            )
            if row.holder != holder and expires > now and not _dead_here(row.holder):
                return row.holder
            # only that very lease: a process racing us may have taken it over already
            stale = (
                Lease.name == name,
                Lease.holder == row.holder,
                Lease.acquired_at == row.acquired_at,
            )
            session.execute(delete(Lease).where(*stale))
    try:
        with Session(engine) as session, session.begin():
            session.add(Lease(name=name, holder=holder, acquired_at=now, expires_at=now + ttl))
    except IntegrityError:
        with Session(engine) as session:
            winner = session.get(Lease, name)
        return winner.holder if winner is not None else "another process"
    return None


def renew_lease(engine: Engine, name: str, holder: str, ttl: timedelta) -> bool:
    """Extend the lease ``name`` to ``ttl`` from now, if ``holder`` still holds it: False when
    it was taken over (expired, or its holder looked dead) and someone else may be writing."""
    now = datetime.now(UTC)
    stmt = (
        update(Lease)
        .where(Lease.name == name, Lease.holder == holder)
        .values(expires_at=now + ttl)
        .execution_options(synchronize_session=False)
    )
    with Session(engine) as session, session.begin():
        return bool(cast(CursorResult[Any], session.execute(stmt)).rowcount)


def release_lease(engine: Engine, name: str, holder: str) -> None:
    """Give the lease back, if this holder still has it."""
    with Session(engine) as session, session.begin():
        session.execute(delete(Lease).where(Lease.name == name, Lease.holder == holder))
