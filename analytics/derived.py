"""The derived tables' rows: logical runs and logical jobs computed once, when the collector
stores a run, by the very functions every reader used to run on each page load
(analytics.outcomes, analytics.verdicts.job_categories). Readers (analytics.frames) take them
while ``store.derived.is_current`` says they were made by this version of the code and the
configured job-name rule, with no run pending; otherwise they compute from the raw rows.

The collector marks each batch's runs pending in the transaction that stores them
(``store.derived.mark_pending``) and recomputes the pending runs ``store.derived.FLUSH_RUNS``
at a time, in the transaction of the batch that reaches that many, and once more when the
collect ends (``flush``): computing a few runs at a
time costs a fixed 50 ms in pandas, more than collecting them. The repository's incidents,
which read all its failures, are found once, when the collect ends: a batch's flush marks them
waiting instead (``store.derived.defer_incidents``). A kill leaves raw rows, derived rows and
marks in step: every run whose rows are out of date is marked, and so are the incidents.

Bump ``store.derived.VERSION`` whenever a change here, or in a function used here, changes a
derived value: the collector and ``ciflake db upgrade`` then rebuild the tables, and until they
do, readers use the raw rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine

from analytics.incidents import affected_spans, candidate_spans, detect
from analytics.outcomes import logical_jobs, logical_runs, with_run_categories
from analytics.verdicts import job_categories
from store import derived, rollups
from store import incidents as incident_rows
from store.frame_queries import (
    DERIVED_JOB_COLUMNS,
    DERIVED_RUN_COLUMNS,
    derived_jobs,
    derived_runs,
    load_attempts,
    load_failures,
    load_jobs,
    run_outcomes,
)
from store.incidents import Spans
from store.project import IncidentSettings, Project
from store.runfilter import Bind, RunFilter

VERSION = derived.VERSION
REBUILD_CHUNK = 2_000  # runs per transaction of a rebuild


def compute(bind: Bind, run_ids: Sequence[int], strip: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logical runs, logical jobs) of ``run_ids`` from their raw rows: the derived tables'
    columns, ``run_id`` first."""
    where = RunFilter(run_ids=tuple(run_ids))
    failures = load_failures(bind, where, detail=())
    runs = logical_runs(run_outcomes(bind, where), load_attempts(bind, where, reruns_only=True))
    runs = with_run_categories(runs, failures)
    jobs = logical_jobs(load_jobs(bind, where), runs[["run_id"]], strip)
    jobs = jobs.assign(category=job_categories(jobs, failures))
    return runs[["run_id", *DERIVED_RUN_COLUMNS]], jobs[list(DERIVED_JOB_COLUMNS)]


def _value(value: Any) -> Any:
    """A frame's cell as the database takes it: None for NaN and NaT, ints for the integer
    columns pandas holds as floats, lists for label tuples."""
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else int(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    columns = list(frame.columns)
    return [
        dict(zip(columns, map(_value, row), strict=True))
        for row in frame.itertuples(index=False, name=None)
    ]


def refresh(conn: Connection, run_ids: Sequence[int], strip: str) -> None:
    """Recompute the derived rows of ``run_ids`` in ``conn``'s transaction: the collector calls
    it in the transaction that stores their raw rows, so a kill never leaves them apart."""
    if not run_ids:
        return
    runs, jobs = compute(conn, run_ids, strip)
    derived.replace_rows(conn, run_ids, _records(runs), _records(jobs))


def incidents(
    bind: Bind, repo: str, settings: IncidentSettings, spans: Spans | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(incidents, their failures) of ``repo`` from its stored failures (that started within
    ``spans``, given): only the jobs around a burst big enough to be one are read to weigh
    it."""
    failures = incident_rows.incident_failures(bind, repo, spans)
    spans = candidate_spans(failures, settings)
    jobs = incident_rows.exposed_jobs(bind, repo, spans) if spans else failures.iloc[:0]
    return detect(failures, jobs, settings, repo)


def refresh_incidents(
    conn: Connection,
    repo: str,
    settings: IncidentSettings,
    run_ids: Sequence[int] | None = None,
) -> None:
    """Recompute ``repo``'s incidents in ``conn``'s transaction: all of them, or (given the
    ``run_ids`` whose rows changed) those in the spans these runs can change
    (``analytics.incidents.affected_spans``), which a nightly collect's hundred runs keep to
    a few days. An incident spans many runs and its share weighs the jobs around it, so it is
    found again whole: one read of the failures, and of the jobs around the bursts."""
    spans = None
    if run_ids is not None:
        touched, held = incident_rows.touched_by(conn, run_ids)
        starts = incident_rows.failure_starts(conn, repo)
        spans = affected_spans(starts, touched, held, settings)
        if not spans:
            return
    found, members = incidents(conn, repo, settings, spans)
    incident_rows.replace(conn, repo, _records(found), _records(members), spans)


def flush(conn: Connection, repo: str, project: Project, *, incidents: bool = True) -> int:
    """Recompute the pending runs of ``repo`` and clear their marks, in ``conn``'s
    transaction, then its incidents if they are out of date; returns how many runs there were.
    Without ``incidents`` (a collect's batch), the incidents are marked waiting instead: the
    collect's last flush finds them once, rather than every batch reading all the failures."""
    ids = derived.pending(conn, repo)
    for start in range(0, len(ids), REBUILD_CHUNK):
        chunk = ids[start : start + REBUILD_CHUNK]
        refresh(conn, chunk, project.job_name_strip)
        derived.clear_pending(conn, chunk)
    if not incidents:
        if ids:
            derived.defer_incidents(conn, repo)
        return len(ids)
    waiting = derived.incidents_waiting(conn, repo)
    if ids or waiting:
        settings = project.analysis.incidents  # all of them after the batches' flushes
        refresh_incidents(conn, repo, settings, None if waiting else ids)
        derived.incidents_found(conn, repo, settings.rule)
    return len(ids)


def rebuild(
    engine: Engine, repo: str, project: Project, advance: Callable[[int], None] | None = None
) -> int:
    """Recompute every derived row of ``repo``, REBUILD_CHUNK runs per transaction, then its
    incidents, and mark the tables current; returns the number of runs. ``advance``: called
    with each chunk's size. Stopped midway, the tables stay marked stale and readers keep
    using the raw rows."""
    strip = project.job_name_strip
    ids = derived.run_ids(engine, repo)
    for start in range(0, len(ids), REBUILD_CHUNK):
        chunk = ids[start : start + REBUILD_CHUNK]
        with engine.begin() as conn:
            refresh(conn, chunk, strip)
        if advance is not None:
            advance(len(chunk))
    with engine.begin() as conn:
        derived.clear_pending(conn, derived.pending(conn, repo))
        refresh_incidents(conn, repo, project.analysis.incidents)
        derived.mark_current(conn, repo, VERSION, strip, project.analysis.incidents.rule)
    return len(ids)


def is_current(bind: Bind, repo: str | None, strip: str) -> bool:
    return derived.is_current(bind, repo, VERSION, strip)


def is_whole(bind: Bind, repo: str, project: Project) -> bool:
    """Whether ``repo``'s derived tables are current and its incidents were found with the
    configured incident settings: nothing for a collect to recompute first."""
    rule = project.analysis.incidents.rule
    return derived.is_current(bind, repo, VERSION, project.job_name_strip, incident_rule=rule)


def ensure_current(engine: Engine, repo: str, project: Project) -> bool:
    """Rebuild ``repo``'s derived tables unless they were made by this version with its
    job-name rule (then only recompute the runs a stopped collect left pending, and the
    incidents if they were found with other settings); True when it rebuilt."""
    strip = project.job_name_strip
    if is_whole(engine, repo, project):
        return False
    with engine.connect() as conn:  # made right, but runs pending or other incident settings
        made_right = derived.is_current(conn, repo, VERSION, strip, ignore_pending=True)
    if made_right:
        settings = project.analysis.incidents
        with engine.begin() as conn:
            flush(conn, repo, project, incidents=False)
            refresh_incidents(conn, repo, settings)
            derived.mark_current(conn, repo, VERSION, strip, settings.rule)
        return False
    rebuild(engine, repo, project)
    return True


def differences(engine: Engine, repo: str, project: Project) -> dict[str, int]:
    """Rows of the stored derived tables of ``repo`` that differ from a fresh computation from
    the raw rows, per table (missing, extra or changed rows): empty when they agree. Runs
    marked pending are known to be out of date and left out, and so are the incidents while
    any run is pending or they wait for a collect's end (which recomputes them). The rollups
    are compared with a GROUP BY of the stored rows, but for the days of the pending runs."""
    strip = project.job_name_strip
    waiting = set(derived.pending(engine, repo))
    ids = [run_id for run_id in derived.run_ids(engine, repo) if run_id not in waiting]
    found: dict[str, int] = {}
    where = RunFilter(repo=repo)
    stored_runs = derived_runs(engine, where, lean=True)[["run_id", *DERIVED_RUN_COLUMNS]]
    stored_jobs = derived_jobs(engine, where)
    stored_runs = stored_runs[~stored_runs["run_id"].isin(waiting)]
    stored_jobs = stored_jobs[~stored_jobs["run_id"].isin(waiting)]
    fresh = [
        compute(engine, ids[s : s + REBUILD_CHUNK], strip)
        for s in range(0, len(ids), REBUILD_CHUNK)
    ]
    fresh_runs = pd.concat([runs for runs, _ in fresh]) if fresh else stored_runs.iloc[:0]
    fresh_jobs = pd.concat([jobs for _, jobs in fresh]) if fresh else stored_jobs.iloc[:0]
    tables = [
        ("logical_runs", stored_runs, fresh_runs),
        ("logical_jobs", stored_jobs, fresh_jobs),
    ]
    if not waiting and not derived.incidents_waiting(engine, repo):
        found_incidents, members = incidents(engine, repo, project.analysis.incidents)
        stored_incidents = incident_rows.load_incidents(engine, repo)
        tables += [
            ("incidents", stored_incidents, found_incidents),
            ("incident_failures", _members(engine, repo), members),
        ]
    for table, stored, computed in tables:
        count = len(_rows(stored) ^ _rows(computed))
        if count:
            found[table] = count
    return found | rollups.differences(engine, repo, sorted(waiting))


def _members(engine: Engine, repo: str) -> pd.DataFrame:
    return incident_rows.load_members(engine, RunFilter(repo=repo))


def _rows(frame: pd.DataFrame) -> set[tuple[Any, ...]]:
    """The rows of ``frame`` as the database stores them, hashable, columns in name order."""
    records = _records(frame[sorted(frame.columns)])
    return {tuple(tuple(v) if isinstance(v, list) else v for v in r.values()) for r in records}
