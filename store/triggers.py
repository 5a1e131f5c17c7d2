"""What the collector read of each tracked workflow's file on the default branch
(``WorkflowTriggers``), and the one read of what SILENT needs per workflow
(``workflow_watch``: analytics.silence)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Engine, func, select, update
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
    its newest run and newest scheduled run (NaT: none stored).

    The newest runs are read per workflow record by its id, from the indexes on
    (workflow_id, created_at) and (workflow_id, event, created_at): a run's path is its
    workflow's (the collector stores each run with the path of the workflow it was listed
    under, tests/test_silence_reads.py), and the records of one path share their runs' times.
    Grouping every run of the repository by path took 0.75 s on the 16x benchmark."""
    run = WorkflowRun

    def newest(*terms: ColumnElement[bool]) -> Any:
        mine = select(func.max(run.created_at)).where(run.workflow_id == Workflow.id, *terms)
        return func.max(mine.scalar_subquery()).over(partition_by=Workflow.path)

    file = WorkflowTriggers
    stmt = (
        select(
            Workflow.path.label("workflow_path"),
            Workflow.state,
            Workflow.updated_at,
            Workflow.created_at,
            file.file_present,
            file.triggers,
            newest().label("last_run_at"),
            newest(run.event == "schedule").label("last_schedule_at"),
        )
        .outerjoin(file, (file.repo == Workflow.repo) & (file.path == Workflow.path))
        .where(Workflow.repo == repo, Workflow.path.in_(paths))
        .order_by(Workflow.path, Workflow.updated_at)
    )
    frame = as_frame(engine, stmt, ("updated_at", "created_at", "last_run_at", "last_schedule_at"))
    # a path re-added gets a record of its own: the newest one speaks for it
    return frame.drop_duplicates("workflow_path", keep="last").reset_index(drop=True)
