"""SQL of the derived tables (``logical_runs``, ``logical_jobs``, ``derived_pending``,
``derived_state``): replace a set of runs' rows, mark and list the runs pending, mark a
repository's incidents as waiting for the end of a collect, say whether a repository's tables
are current, list the runs to rebuild. What goes in the rows is computed by analytics.derived."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from store import rollups
from store.models import DerivedPending, DerivedState, LogicalJob, LogicalRun, WorkflowRun
from store.runfilter import Bind, connected
from store.upsert import upsert

CHUNK = 500  # run ids per IN (...): far below SQLite's limit of bound parameters
# The derivation's version (analytics.derived): bump it whenever a change there, or in a
# function it uses, changes a derived value; tables made by another version are rebuilt.
# Kept here, with the pending marks, so that a collect needs no pandas until it recomputes.
VERSION = 3
FLUSH_RUNS = 1_000  # pending runs that a collect's batch recomputes in its own transaction
# ``derived_state.incident_rule`` while runs were recomputed after the incidents were found: no
# settings' rule, so the collector finds the incidents again (at its end, or at the next
# collect's start after a kill), and a check leaves them out meanwhile.
INCIDENTS_WAITING = "waiting for the collect's end"


def _chunks(ids: Sequence[int]) -> list[Sequence[int]]:
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


def replace_rows(
    conn: Connection,
    run_ids: Sequence[int],
    runs: Sequence[Mapping[str, Any]],
    jobs: Sequence[Mapping[str, Any]],
) -> None:
    """The derived rows of ``run_ids`` become ``runs`` and ``jobs``: a logical job that is no
    more (a job renamed by a rerun, a new job-name rule) does not linger. The rollups of their
    days are counted again."""
    for chunk in _chunks(list(run_ids)):
        conn.execute(delete(LogicalJob).where(LogicalJob.run_id.in_(chunk)))
        conn.execute(delete(LogicalRun).where(LogicalRun.run_id.in_(chunk)))
    upsert(conn, LogicalRun, runs)
    upsert(conn, LogicalJob, jobs)
    rollups.refresh(conn, run_ids)


def mark_pending(conn: Connection, repo: str, run_ids: Sequence[int]) -> int:
    """Mark ``run_ids`` pending; returns how many runs of ``repo`` are pending now."""
    rows = [{"run_id": run_id, "repo": repo} for run_id in run_ids]
    upsert(conn, DerivedPending, rows, update=())
    stmt = select(func.count()).select_from(DerivedPending).where(DerivedPending.repo == repo)
    return int(conn.scalar(stmt) or 0)


def pending(bind: Bind, repo: str | None) -> list[int]:
    """The runs of ``repo`` (None: of every repository) whose derived rows are out of date."""
    stmt = select(DerivedPending.run_id).order_by(DerivedPending.run_id)
    if repo is not None:
        stmt = stmt.where(DerivedPending.repo == repo)
    with connected(bind) as conn:
        return list(conn.scalars(stmt))


def clear_pending(conn: Connection, run_ids: Sequence[int]) -> None:
    for chunk in _chunks(list(run_ids)):
        conn.execute(delete(DerivedPending).where(DerivedPending.run_id.in_(chunk)))


def defer_incidents(conn: Connection, repo: str) -> None:
    """Mark ``repo``'s incidents out of date, in the transaction that recomputed runs without
    them: a collect finds them once, when it ends, rather than with every batch that flushes."""
    stmt = update(DerivedState).where(DerivedState.repo == repo)
    conn.execute(stmt.values(incident_rule=INCIDENTS_WAITING))


def incidents_waiting(bind: Bind, repo: str) -> bool:
    """Whether ``repo``'s incidents were marked out of date by ``defer_incidents`` and not
    found since."""
    stmt = select(DerivedState.incident_rule).where(DerivedState.repo == repo)
    with connected(bind) as conn:
        return conn.scalar(stmt) == INCIDENTS_WAITING


def incidents_found(conn: Connection, repo: str, incident_rule: str) -> None:
    """``repo``'s incidents were just found with the settings ``incident_rule``."""
    stmt = update(DerivedState).where(DerivedState.repo == repo)
    conn.execute(stmt.values(incident_rule=incident_rule))


def mark_current(
    conn: Connection, repo: str, version: int, job_name_strip: str, incident_rule: str
) -> None:
    row = {
        "repo": repo,
        "version": version,
        "job_name_strip": job_name_strip,
        "incident_rule": incident_rule,
        "built_at": datetime.now(UTC),
    }
    upsert(conn, DerivedState, [row])


def is_current(
    bind: Bind,
    repo: str | None,
    version: int,
    job_name_strip: str,
    *,
    incident_rule: str | None = None,
    ignore_pending: bool = False,
) -> bool:
    """Whether the derived rows of ``repo`` (None: every repository with runs) were computed
    by this version of the derivation with this job-name rule (and, given
    ``incident_rule``, its incidents with these settings), and (unless ``ignore_pending``)
    none is pending."""
    state = DerivedState
    waiting = select(DerivedPending.run_id).limit(1)
    if repo is not None:
        waiting = waiting.where(DerivedPending.repo == repo)
    # Whether a run is pending rides on the states' statement: every report table asks this
    # (reports.table_inputs.shared_counts), and on PostgreSQL each statement is a round trip.
    read = select(
        state.repo,
        state.version,
        state.job_name_strip,
        state.incident_rule,
        waiting.scalar_subquery().label("waiting"),
    )
    with connected(bind) as conn:
        rows = conn.execute(read).all()
        repos = [repo] if repo is not None else repositories(conn)
        # no state at all: current only when there is no repository, and then nothing pending
        pending = rows[0].waiting if rows else None if repos else conn.scalar(waiting)
    if not ignore_pending and pending is not None:
        return False
    states = {
        row.repo: (
            row.version,
            row.job_name_strip,
            row.incident_rule if incident_rule is not None else None,
        )
        for row in rows
    }
    wanted = (version, job_name_strip, incident_rule)
    return all(states.get(name) == wanted for name in repos)


def run_ids(bind: Bind, repo: str) -> list[int]:
    """Every stored run of ``repo``, oldest id first."""
    with connected(bind) as conn:
        stmt = select(WorkflowRun.id).where(WorkflowRun.repo == repo).order_by(WorkflowRun.id)
        return list(conn.scalars(stmt))


def repositories(bind: Bind) -> list[str]:
    """Every repository with stored runs, in name order: each found from the last by one look
    in the runs' repo index (a recursive "loose index scan"), where a DISTINCT walked every
    entry of it (0.06 s at 16x, on each page view)."""
    repo = WorkflowRun.repo
    found = select(func.min(repo).label("repo")).cte("found", recursive=True)
    following = select(func.min(repo)).where(repo > found.c.repo).scalar_subquery()
    found = found.union_all(select(following).where(found.c.repo.is_not(None)))
    with connected(bind) as conn:
        stmt = select(found.c.repo).where(found.c.repo.is_not(None)).order_by(found.c.repo)
        return list(conn.scalars(stmt))
