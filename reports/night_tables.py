"""Report tables of the nightly summary: the headline's sides, their repair and rerun cost, the
failures in groups, the stale and the silent workflows. ``reports.summary`` reads them through
the registry (``reports.tables.build``), as ``ciflake export`` does.

They answer a ``Query`` whose ``since`` is the summary's --since (the failures since then),
``event_date`` the change event compared around (None: the runs since ``since``) and
``as_of`` the moment of the summary. Each reads the runs from ``HISTORY_DAYS`` before
``since`` (the neighbours a failure's verdict compares with), and from the event's window
before it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import Engine

from analytics import staleness as st
from analytics.elsewhere import failed_elsewhere
from analytics.evidence import failure_basis
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.health import HEALTH_COLUMNS, health_table
from analytics.newness import NEW_DAYS, is_new
from analytics.once import label_once, run_incidents, stability_once, verdicts_once
from analytics.rates import verdict_label
from analytics.silence import SILENT_COLUMNS
from analytics.text import filled
from analytics.verdicts import job_verdicts
from reports.query import Query
from reports.summary_target import HISTORY_DAYS
from reports.table_inputs import events_of, shared_counts, silent_workflows_of
from reports.table_spec import ReportTable
from store.frame_queries import load_jobs
from store.incidents import load_members
from store.page_queries import failure_details, run_span, signature_summary
from store.project import Project
from store.runfilter import RunFilter

# Failure groups in the order shown; a NEW signature wins over the verdict.
GROUPS = {
    "NEW": f"🆕 NEW signature (first seen in the {NEW_DAYS} days up to now)",
    "PERSISTENT": "🟥 PERSISTENT (the neighbouring run failed too)",
    "FLAKY": "🔁 FLAKY (passed on a rerun or on the same commit)",
    "INCIDENT": "🌩️ INCIDENT (one of an incident's failures: counted once, never flaky)",
    "INFRA/ENV": "🛠️ INFRA/ENV (runner, NPU environment, network, timeout)",
    "OTHER": "❔ ONE-OFF or UNCLASSIFIED",
}
VERDICT_GROUPS = {
    "persistent": "PERSISTENT",
    "flaky": "FLAKY",
    "incident": "INCIDENT",
    "infra": "INFRA/ENV",
}

HEADLINE_COLUMNS = ["lineage", "side", "runs", "label", "runs_once", "label_once", "workflows"]
SIDE_HEALTH_COLUMNS = ["side", *HEALTH_COLUMNS]
FAILURE_GROUP_COLUMNS = [
    "group",
    "created_at",
    "workflow_path",
    "logical_job",
    "category",
    "verdict",
    "evidence",
    "line",
    "runner_name",
    "html_url",
    "stage",
    "basis",
    "correction_note",
    "signature",
    "works_elsewhere",
]
STALE_COLUMNS = ["workflow_path", *st.COLUMNS]
RUNS_SINCE_COLUMNS = ["lineage", "runs"]


def stem(path: str) -> str:
    """A workflow's file name without folder and extension."""
    return path.rsplit("/", 1)[-1].removesuffix(".yml").removesuffix(".yaml")


def chosen_event(engine: Engine, project: Project, query: Query) -> pd.Series | None:
    """The change event at ``query.event_date`` (the last of them when several), else None."""
    if query.event_date is None:
        return None
    events = events_of(engine, project)
    chosen = events[events["event_date"] == pd.Timestamp(query.event_date)]
    return None if chosen.empty else chosen.iloc[-1]


@dataclass(frozen=True)
class _Read:
    """What the night's tables read: the event, the filter from where reading starts (every
    later run included) and its logical runs, read once for all of them
    (reports.table_inputs.shared_counts: do not modify the frame)."""

    event: pd.Series | None
    where: RunFilter
    runs: pd.DataFrame


def _read(engine: Engine, project: Project, query: Query) -> _Read:
    event = chosen_event(engine, project, query)
    start = None
    if query.since is not None:
        start = pd.Timestamp(query.since) - pd.Timedelta(days=HISTORY_DAYS)
    if event is not None and start is not None:
        start = min(start, event["event_date"] - pd.Timedelta(days=project.analysis.window_days))
    where = replace(query, since=None if start is None else start.to_pydatetime()).where(project)
    runs = shared_counts(
        "night-runs", engine, project, where, lambda _: logical_run_frame(engine, project, where)
    )
    return _Read(event, where, runs)


def _members(engine: Engine, project: Project, read: _Read) -> pd.DataFrame:
    """The incident failures of the runs read (store.incidents.load_members), read once."""
    return shared_counts(
        "night-members", engine, project, read.where, lambda _: load_members(engine, read.where)
    )


def migration_sides(runs: pd.DataFrame, event_date: pd.Timestamp, window_days: int) -> pd.DataFrame:
    """``runs`` tagged ``side``: before = the W days before the event, after = since it; only
    the lineages the migration changed (their active workflows differ) and that still run."""
    offset = runs["created_at"] - event_date
    before = runs[(offset >= -pd.Timedelta(days=window_days)) & (offset < pd.Timedelta(0))]
    tagged = pd.concat(
        [before.assign(side="before"), runs[offset >= pd.Timedelta(0)].assign(side="after")],
        ignore_index=True,
    )
    active = tagged.groupby(["lineage", "side"])["workflow_path"].agg(frozenset)
    migrated = [
        lineage
        for lineage in tagged["lineage"].unique()
        if (lineage, "after") in active
        and active.get((lineage, "before")) != active[(lineage, "after")]
    ]
    return tagged[tagged["lineage"].isin(migrated)]


def _sides(read: _Read, query: Query, window_days: int) -> pd.DataFrame:
    """The runs of the headline's sides: before and after the event, else ``since``."""
    if read.event is None:
        return _since(read.runs, query).assign(side="since")
    return migration_sides(read.runs, read.event["event_date"], window_days)


def _since(frame: pd.DataFrame, query: Query) -> pd.DataFrame:
    """The rows of ``frame`` created since ``query.since`` (every row without one)."""
    return frame if query.since is None else frame[frame["created_at"] >= query.since]


def headline_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Per lineage (and ``(all)``) and side: runs, success label (Wilson interval), the same
    with each incident counted once (analytics.once), and the workflows that ran."""
    read = _read(engine, project, query)
    sides = _sides(read, query, project.analysis.window_days)
    min_runs = project.analysis.min_runs
    both = pd.concat([sides.assign(lineage="(all)"), sides], ignore_index=True)
    members = _members(engine, project, read)
    table = stability_once(both, run_incidents(both, members), ["lineage", "side"], min_runs)
    table["label"] = verdict_label(table)
    table["label_once"] = label_once(table, min_runs)
    names = both.groupby(["lineage", "side"])["workflow_path"].agg(
        lambda paths: ", ".join(sorted({stem(p) for p in paths}))
    )
    table["workflows"] = pd.MultiIndex.from_frame(table[["lineage", "side"]]).map(names.to_dict())
    return table[HEADLINE_COLUMNS]


def side_health_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """analytics.health.health_table per side of the headline: the job attempts of its runs."""
    read = _read(engine, project, query)
    sides = _sides(read, query, project.analysis.window_days)
    attempts = load_jobs(engine, read.where)
    attempts = attempts[attempts["run_id"].isin(read.runs["run_id"])].reset_index(drop=True)
    return health_table(sides.reset_index(drop=True), attempts, ["side"])[SIDE_HEALTH_COLUMNS]


def failure_groups_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Failed logical jobs of runs created since ``since`` (plus runs that failed with no
    jobs), each in a group: NEW when its signature is NEW up to ``as_of`` (analytics.newness,
    from its first sighting in the whole history), else by its verdict with incidents counted
    once (an incident's failure is INCIDENT, never FLAKY); basis of its category
    (analytics.evidence), works_elsewhere (analytics.elsewhere, by runner name)."""
    read = _read(engine, project, query)
    jobs = logical_job_frame(engine, project, read.where, read.runs).reset_index(drop=True)
    failures = failure_details(engine, read.where)
    failures = failures[failures["run_id"].isin(read.runs["run_id"])].reset_index(drop=True)
    end = pd.Timestamp(query.as_of or datetime.now(UTC))
    first_seen = signature_summary(engine, query.where(project))
    verdicts = verdicts_once(job_verdicts(jobs, failures), _members(engine, project, read))
    verdicts = verdicts.assign(verdict=verdicts["verdict_once"])
    recent = _since(verdicts, query).reset_index(drop=True)
    failures = failures.assign(basis=failure_basis(failures))
    by_job = failures[failures["job_id"] != 0].drop_duplicates("job_id").set_index("job_id")
    detail = by_job.reindex(recent["red_job_id"].astype("Int64")).reset_index(drop=True)
    job_rows = recent[["created_at", "workflow_path", "logical_job", "verdict", "evidence"]].assign(
        category=detail["category"].fillna(recent["category"]),
        signature=detail["signature"],
        line=detail["line"],
        runner_name=detail["runner_name"].fillna(recent["runner_name"]),
        html_url=detail["html_url"],
        stage=detail["stage"],
        basis=detail["basis"],
        correction_note=detail["correction_note"],
    )
    runs_without_jobs = _since(failures[failures["job_id"] == 0], query)
    run_rows = runs_without_jobs.assign(
        logical_job="(no jobs)", verdict="unclassified", evidence="the run failed with no jobs"
    )[job_rows.columns]
    rows = pd.concat([job_rows, run_rows], ignore_index=True)
    flagged = failed_elsewhere(jobs, "runner_name")
    rows["works_elsewhere"] = _works_elsewhere(flagged, recent).reindex(
        rows.index, fill_value=False
    )
    sighted = first_seen.set_index("signature")["first_seen"].to_dict()
    sightings = pd.to_datetime(rows["signature"].map(sighted), utc=True)
    new = rows["signature"].notna() & is_new(sightings, end)
    rows["group"] = filled(rows["verdict"].map(VERDICT_GROUPS), "OTHER").where(~new, "NEW")
    order = {group: rank for rank, group in enumerate(GROUPS)}
    rows = rows.assign(rank=rows["group"].map(order)).sort_values(
        ["rank", "created_at"], ascending=[True, False], kind="stable"
    )
    return rows[FAILURE_GROUP_COLUMNS].reset_index(drop=True)


def _works_elsewhere(flagged: pd.DataFrame, failed: pd.DataFrame) -> pd.Series:
    """Per row of ``failed`` (failed logical jobs), whether ``flagged`` says it works
    elsewhere."""
    keys = ["run_id", "workflow_path", "logical_job"]
    elsewhere = pd.MultiIndex.from_frame(flagged.loc[flagged["works_elsewhere"], keys])
    return pd.Series(pd.MultiIndex.from_frame(failed[keys]).isin(elsewhere), index=failed.index)


def stale_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The STALE workflows (analytics.staleness against the repository's newest run) that
    still ran after the event (without one: every STALE one), the SILENT ones left out."""
    read = _read(engine, project, query)
    _, newest = run_span(engine, project.repo)
    reference = None if newest is None else pd.Timestamp(newest)
    stale = st.staleness(read.runs, "workflow_path", reference, project.analysis.stale_factor)
    stale = stale[stale["status"] == st.STALE]
    if read.event is not None:
        stale = stale[stale["last_run_at"] >= read.event["event_date"]]
    silent = silent_workflows_of(engine, project)["workflow_path"]
    return stale[~stale["workflow_path"].isin(silent)][STALE_COLUMNS].reset_index(drop=True)


def silent_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The tracked workflows that should have run and did not (analytics.silence), now."""
    return silent_workflows_of(engine, project)[SILENT_COLUMNS]


def runs_since_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Per lineage, and ``(all)``, the logical runs created since ``since``, excluded ones
    too: whether anything ran at all (the summary's "no run since then")."""
    runs = _since(_read(engine, project, query).runs, query)
    table = pd.concat([runs.assign(lineage="(all)"), runs]).groupby("lineage", sort=False).size()
    return table.rename("runs").reset_index()[RUNS_SINCE_COLUMNS]


TABLES = (
    ReportTable(
        "night-headline",
        "a lineage (and (all)) on a side of the change event (else since --since): its runs",
        HEADLINE_COLUMNS,
        headline_table,
    ),
    ReportTable(
        "night-runs",
        "a lineage (and (all)): its runs since --since, excluded ones too",
        RUNS_SINCE_COLUMNS,
        runs_since_table,
    ),
    ReportTable(
        "night-health",
        "a side of the change event: time to repair, retry tax, durations",
        SIDE_HEALTH_COLUMNS,
        side_health_table,
    ),
    ReportTable(
        "night-failures",
        "a failed logical job since --since, in the summary's group (NEW, PERSISTENT...)",
        FAILURE_GROUP_COLUMNS,
        failure_groups_table,
        "category",
    ),
    ReportTable(
        "stale",
        "a workflow that stopped running (STALE), not SILENT",
        STALE_COLUMNS,
        stale_table,
    ),
    ReportTable(
        "silent",
        "a tracked workflow that should have run and did not (SILENT)",
        SILENT_COLUMNS,
        silent_table,
    ),
)
