"""SILENT and RETIRED: the one definition of a tracked workflow that should have run and did
not, and of one a declared change removed (docs/vocabulary.md). The Overview's tiles, the
nightly summary and ``ciflake doctor`` all read ``silent_workflows``.

A tracked workflow is SILENT when, in this order:

- **disabled**: the workflows API's ``state`` is not ``active`` (GitHub disables a scheduled
  workflow after 60 days without activity in a public repository; a disabled workflow runs on
  nothing, push and pull requests included);
- **file gone**: its path is no longer in the default branch's ``.github/workflows`` listing
  (GitHub keeps listing a deleted workflow ``active``: the state alone does not tell), once
  all its runs are listed (``listed``: its backfill is complete) and one is stored: until then
  its last run, and with it whether a declared change retired it, is unknown; one that never
  ran did not stop;
- **schedule not firing**: two of its cron slots have passed since its last scheduled run
  (or, never run, since it was created and collected) with no run, each at least ``LATE``
  before the reference moment: GitHub queues scheduled runs late, by hours at busy times, and
  may drop one.

A workflow that a declared migration retired (``retirements``) is RETIRED, never SILENT."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from analytics.config_tables import event_table
from store.bookkeeping import workflow_progress
from store.page_queries import run_span
from store.project import Project
from store.triggers import workflow_watch

LATE = pd.Timedelta(hours=6)  # GitHub's scheduled runs come hours late at busy times
MISSED = 2  # cron slots with no run before a schedule counts as not firing (one may be dropped)
RETIRE_DAYS = 30  # a workflow that ran this close before a migration and never after: removed
DISABLED, GONE, NOT_FIRING = "disabled", "file gone", "schedule not firing"
SILENT_COLUMNS = ["workflow_path", "lineage", "reason", "detail", "since"]
STATES = {
    "disabled_inactivity": "disabled by GitHub for inactivity",
    "disabled_manually": "disabled by hand",
    "disabled_fork": "disabled in a fork",
    "deleted": "deleted",
}
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's order: 0 is Sunday


def retirements(runs: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Workflows a configured migration removed: those that ran in the RETIRE_DAYS before a
    migration touching their lineage and never on or after it. Columns: workflow_path,
    lineage, retired_at (the event's date), event_pr, successors (";"-joined workflow paths of
    its lineage that ran after the event; empty: no successor, the coverage is lost)."""
    columns = ["workflow_path", "lineage", "retired_at", "event_pr", "successors"]
    migrations = events[events["event_kind"] == "migration"].sort_values("event_date")
    if runs.empty or migrations.empty:
        return pd.DataFrame(columns=columns)
    spans = _last_runs(runs)
    near = pd.Timedelta(days=RETIRE_DAYS)
    dates: list[pd.Timestamp] = list(migrations["event_date"])
    touches: list[tuple[str, ...] | None] = list(migrations["event_lineages"])
    prs: list[object] = list(migrations["event_pr"])
    rows = []
    for (lineage, path), last in spans.items():
        for date, lineages, pr in zip(dates, touches, prs, strict=True):
            touched = lineages is None or lineage in lineages
            if touched and date - near <= last < date:
                successors = ";".join(
                    sorted(
                        other
                        for (kin, other), ran in spans.items()
                        if kin == lineage and other != path and ran >= date
                    )
                )
                rows.append((path, lineage, date, pr, successors))
                break
    return pd.DataFrame(rows, columns=columns)


def _last_runs(runs: pd.DataFrame) -> dict[tuple[str, str], pd.Timestamp]:
    """Each (lineage, workflow_path)'s last run, in the order DataFrame.groupby gives them
    (sorted; a missing key or time: none), counted over the runs' codes."""
    lineage, lineages = pd.factorize(runs["lineage"], sort=True)
    path, paths = pd.factorize(runs["workflow_path"], sort=True)
    created = runs["created_at"]
    kept = np.flatnonzero((lineage >= 0) & (path >= 0) & created.notna().to_numpy())
    pair = lineage[kept].astype(np.int64) * len(paths) + path[kept]
    moment = created.iloc[kept].to_numpy(dtype="datetime64[ns]").view(np.int64)
    order = np.lexsort((moment, pair))  # each pair's runs together, its last one last
    ends = np.flatnonzero(np.r_[pair[order][1:] != pair[order][:-1], True])
    last = kept[order[ends]]
    return {(str(lineages[lineage[at]]), str(paths[path[at]])): created.iloc[at] for at in last}


def cron_slots(cron: str, timezone: str | None, after: datetime, count: int) -> list[datetime]:
    """The first ``count`` times after ``after`` at which the POSIX ``cron`` line fires in
    ``timezone`` (None: UTC), as GitHub reads it: day 0 or 7 of the week is Sunday; when
    neither day field starts with `*`, a day matching either fires (Vixie cron: `*/2` with a
    weekday is both); `a/n` runs from a to the field's max. Empty when the line or the
    timezone cannot be read."""
    fields = cron.split()
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return []
    if len(fields) != 5:
        return []
    minute, hour, day, month, weekday = fields
    either = [(day, weekday)]
    if not day.startswith("*") and not weekday.startswith("*"):  # crontab: either one
        either = [(day, "*"), ("*", weekday)]
    slots: set[datetime] = set()
    try:
        for days, weekdays in either:
            trigger = CronTrigger(
                minute=minute,
                hour=hour,
                day=days,
                month=month,
                day_of_week=_weekdays(weekdays),
                timezone=zone,
            )
            moment: datetime | None = after + timedelta(seconds=1)
            for _ in range(count):
                moment = trigger.get_next_fire_time(None, moment)
                if moment is None:
                    break
                slots.add(moment)
                moment += timedelta(seconds=1)
    except ValueError:
        return []
    return sorted(slots)[:count]


def _weekdays(field: str) -> str:
    """crontab's day-of-week field as APScheduler's, whose numbers count from Monday: by name
    (``0-2`` is ``sun,mon,tue``; ``5-7`` is ``fri,sat,sun``)."""
    if field == "*":
        return "*"
    days: set[int] = set()
    for item in field.lower().split(","):
        spec, _, step = item.partition("/")
        if spec == "*":
            low, high = 0, 6
        else:
            first, _, last = spec.partition("-")
            low = _day(first)
            high = _day(last) if last else (7 if step else low)
        days.update(d % 7 for d in range(low, high + 1, int(step or 1)))
    return ",".join(DAY_NAMES[d] for d in sorted(days))


def _day(text: str) -> int:
    return DAY_NAMES.index(text[:3]) if text[:3] in DAY_NAMES else int(text)


def silences(
    watch: pd.DataFrame, retired: set[str], reference: pd.Timestamp | None, start: Any = None
) -> pd.DataFrame:
    """The SILENT rows (SILENT_COLUMNS) of ``watch`` (store.triggers.workflow_watch, with
    lineage and ``listed``: all its runs listed, its backfill complete), the ``retired`` paths
    left out: reason (DISABLED, GONE, NOT_FIRING), detail (in
    words) and since (when it went silent: the state's change, the last run, the first missed
    slot). ``reference``: the repository's newest run; ``start``: its oldest, where a
    schedule that never fired is counted from when nothing was collected before."""
    rows = []
    for row in watch.itertuples(index=False):
        if row.workflow_path in retired:
            continue
        found = _silence(row, reference, start)
        if found is not None:
            rows.append((row.workflow_path, row.lineage, *found))
    return pd.DataFrame(rows, columns=SILENT_COLUMNS)


def _silence(row: Any, reference: pd.Timestamp | None, start: Any) -> tuple[str, str, Any] | None:
    """(reason, detail, since) of one workflow, or None."""
    last = row.last_run_at
    if row.state != "active":
        changed = row.updated_at
        since = changed if pd.notna(changed) and (pd.isna(last) or changed >= last) else last
        return DISABLED, STATES.get(row.state, row.state), since
    if pd.notna(row.file_present) and not row.file_present:
        if not row.listed or pd.isna(last):  # retired or not, unknown; never run: not stopped
            return None
        where = "its file is gone from the default branch's .github/workflows"
        return GONE, f"{where}, and no declared change retired it", last
    schedule = (row.triggers or {}).get("schedule") or []
    if not schedule or reference is None or pd.isna(reference):
        return None
    anchor = row.last_schedule_at
    if pd.isna(anchor):  # never fired: from when it exists and is collected
        known = [t for t in (row.created_at, start) if t is not None and pd.notna(t)]
        if not known:
            return None
        anchor = max(known)
    cutoff = pd.Timestamp(reference) - LATE
    slots = sorted(
        slot
        for entry in schedule
        for slot in cron_slots(entry["cron"], entry.get("timezone"), anchor, MISSED)
    )[:MISSED]
    if len(slots) < MISSED or slots[-1] > cutoff:
        return None
    lines = ", ".join(
        f"{e['cron']}" + (f" {e['timezone']}" if e.get("timezone") else "") for e in schedule
    )
    return (
        NOT_FIRING,
        f"its schedule ({lines}) passed at least {MISSED} times with no run",
        pd.Timestamp(slots[0]),
    )


def describe_silence(detail: str, since: Any) -> str:
    """One SILENT workflow's reason and since when, in the same words on every surface."""
    when = f"; silent since {pd.Timestamp(since):%Y-%m-%d %H:%M} UTC" if pd.notna(since) else ""
    return f"{detail}{when}"


def silent_workflows(engine: Engine, project: Project) -> pd.DataFrame:
    """The SILENT workflows of ``project`` now (``silences`` over what the store knows; the
    reference moment is the repository's newest run, as STALE's)."""
    lineages = {w.path: w.lineage for w in project.workflows}
    watch = workflow_watch(engine, project.repo, list(lineages))
    watch["lineage"] = watch["workflow_path"].map(lineages)
    ran = watch.dropna(subset=["last_run_at"])[["lineage", "workflow_path", "last_run_at"]]
    ran = ran.rename(columns={"last_run_at": "created_at"})
    retired = set(retirements(ran, event_table(project.events))["workflow_path"])
    oldest, newest = run_span(engine, project.repo)
    progress = workflow_progress(engine, project.repo)
    watch["listed"] = [
        path in progress and progress[path].complete for path in watch["workflow_path"]
    ]
    reference = None if newest is None else pd.Timestamp(newest)
    return silences(watch, retired, reference, None if oldest is None else pd.Timestamp(oldest))
