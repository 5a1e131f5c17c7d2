"""The configuration the analytics need, as small frames: the shell passes its config objects
here, so ``analytics`` never imports the shell (layers import downward only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

import pandas as pd


class WorkflowLike(Protocol):
    path: str
    lineage: str
    tags: tuple[str, ...]
    accelerator: str


class EventLike(Protocol):
    date: datetime
    title: str
    pr: int | None
    kind: str
    lineages: tuple[str, ...] | None


class LineageLike(Protocol):
    name: str
    job_renames: Mapping[str, str]


WORKFLOW_COLUMNS = ["workflow_path", "lineage", "tags", "accelerator"]
EVENT_COLUMNS = ["event_date", "event_pr", "event_title", "event_kind", "event_lineages"]


def workflow_table(workflows: Iterable[WorkflowLike]) -> pd.DataFrame:
    """One row per tracked workflow: workflow_path, lineage, tags (";"-joined), accelerator."""
    rows = [(w.path, w.lineage, ";".join(w.tags), w.accelerator) for w in workflows]
    return pd.DataFrame(rows, columns=WORKFLOW_COLUMNS)


def event_table(events: Iterable[EventLike]) -> pd.DataFrame:
    """One row per change event: event_date (UTC), event_pr, event_title, event_kind,
    event_lineages (a tuple, or None for every lineage); oldest first."""
    rows = [(e.date, e.pr, e.title, e.kind, e.lineages) for e in events]
    frame = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    frame["event_date"] = pd.to_datetime(frame["event_date"], utc=True)
    frame["event_pr"] = frame["event_pr"].astype("Int64")
    return frame.sort_values("event_date", kind="stable").reset_index(drop=True)


def job_renames(lineages: Iterable[LineageLike]) -> dict[str, dict[str, str]]:
    """Lineage name -> {predecessor job-name stem: successor stem}."""
    return {lineage.name: dict(lineage.job_renames) for lineage in lineages}
