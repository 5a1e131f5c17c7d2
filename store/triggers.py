"""What the collector read of each tracked workflow's file on the default branch
(``WorkflowTriggers``), and the one read of what SILENT needs per workflow
(``workflow_watch``: analytics.silence)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, case, func, select, update
from sqlalchemy.orm import Session

from store.models import Workflow, WorkflowRun, WorkflowTriggers
from store.runfilter import as_frame
from store.upsert import upsert

if TYPE_CHECKING:
    import pandas as pd

WATCH_COLUMNS = (
    "workflow_path",
    "state",
    "updated_at",
    "created_at",
    "file_present",
    "triggers",
    "last_run_at",
    "last_schedule_at",
)


def stored_triggers(session: Session, repo: str) -> dict[str, WorkflowTriggers]:
    """The rows of ``repo`` by path: the collector reads a file again only when its blob
    changed."""
    rows = session.scalars(select(WorkflowTriggers).where(WorkflowTriggers.repo == repo))
    return {row.path: row for row in rows}


def save_triggers(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    upsert(session, WorkflowTriggers, rows)


def mark_checked(session: Session, repo: str, paths: Sequence[str], at: datetime) -> None:
    """The rows of ``paths`` checked again at ``at`` with nothing changed (a 304)."""
    file = WorkflowTriggers
    session.execute(
        update(file).where(file.repo == repo, file.path.in_(paths)).values(checked_at=at)
    )


def workflow_watch(engine: Engine, repo: str, paths: Sequence[str]) -> pd.DataFrame:
    """One row per path of ``paths`` that GitHub knows (WATCH_COLUMNS): the workflows API's
    state, updated_at and created_at; the file's presence and triggers (None: never read);
    its newest run and newest scheduled run (NaT: none stored)."""
    run = WorkflowRun
    schedule = case((run.event == "schedule", run.created_at))
    last = (
        select(
            run.workflow_path,
            func.max(run.created_at).label("last_run_at"),
            func.max(schedule).label("last_schedule_at"),
        )
        .where(run.repo == repo, run.workflow_path.in_(paths))
        .group_by(run.workflow_path)
        .subquery()
    )
    file = WorkflowTriggers
    stmt = (
        select(
            Workflow.path.label("workflow_path"),
            Workflow.state,
            Workflow.updated_at,
            Workflow.created_at,
            file.file_present,
            file.triggers,
            last.c.last_run_at,
            last.c.last_schedule_at,
        )
        .outerjoin(file, (file.repo == Workflow.repo) & (file.path == Workflow.path))
        .outerjoin(last, last.c.workflow_path == Workflow.path)
        .where(Workflow.repo == repo, Workflow.path.in_(paths))
        .order_by(Workflow.path, Workflow.updated_at)
    )
    frame = as_frame(engine, stmt, ("updated_at", "created_at", "last_run_at", "last_schedule_at"))
    # a path re-added gets a record of its own: the newest one speaks for it
    return frame.drop_duplicates("workflow_path", keep="last").reset_index(drop=True)
