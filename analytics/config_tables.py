"""The settings the analytics read, as small frames: workflows, events, invalid windows and job
renames (from store.settings). Typed by Protocols, so a test passes plain objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

import pandas as pd


# Read-only members (properties), so that frozen dataclasses such as store.settings' match.
class WorkflowLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def lineage(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def accelerator(self) -> str: ...


class EventLike(Protocol):
    @property
    def date(self) -> datetime: ...
    @property
    def title(self) -> str: ...
    @property
    def pr(self) -> int | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def lineages(self) -> tuple[str, ...] | None: ...


class InvalidWindowLike(Protocol):
    @property
    def workflow(self) -> str: ...
    @property
    def start(self) -> datetime: ...
    @property
    def end(self) -> datetime: ...
    @property
    def reason(self) -> str: ...


class LineageLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def job_renames(self) -> Mapping[str, str]: ...


WORKFLOW_COLUMNS = ["workflow_path", "lineage", "tags", "accelerator"]
EVENT_COLUMNS = ["event_date", "event_pr", "event_title", "event_kind", "event_lineages"]


def config_lineages(workflows: Iterable[WorkflowLike]) -> list[str]:
    """The lineages of the configured workflows, each once, sorted: the lineages an event that
    names none touches, for the Migrations page and ``ciflake export before-after`` alike."""
    return sorted({w.lineage for w in workflows})


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


INVALID_WINDOW_COLUMNS = ["workflow_path", "invalid_from", "invalid_to", "invalid_reason"]


def invalid_window_table(windows: Iterable[InvalidWindowLike]) -> pd.DataFrame:
    """One row per configured ``[[invalid_windows]]`` span (UTC, ``to`` excluded)."""
    rows = [(w.workflow, w.start, w.end, w.reason) for w in windows]
    frame = pd.DataFrame(rows, columns=INVALID_WINDOW_COLUMNS)
    for column in ("invalid_from", "invalid_to"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame
