"""The summary's tables, from frames (pure): the headline per lineage and side, the successors'
first runs, the failures in groups, the coverage lost, the stale workflows, and the repair and
rerun cost either side; without a change event, the runs since --since per lineage, the
failures and the stale workflows. ``summarise`` builds them all; reports.summary_render writes
them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from analytics.config_tables import event_table
from analytics.coverage import coverage_diff, lost_jobs
from analytics.elsewhere import failed_elsewhere
from analytics.environments import environment_failures
from analytics.evidence import failure_basis
from analytics.health import health_table
from analytics.newness import NEW_DAYS, is_new
from analytics.once import label_once, run_incidents, stability_once, verdicts_once
from analytics.rates import verdict_label
from analytics.silence import SILENT_COLUMNS
from analytics.staleness import STALE, staleness
from analytics.successors import successor_first_runs
from analytics.text import filled
from analytics.triage import TriagePlan, recurring
from analytics.verdicts import job_verdicts
from store.bookkeeping import LastCollect
from store.project import Analysis, TriageSettings

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


@dataclass(frozen=True)
class Backfill:
    """How far a repository's first collects (its backfill) have come: the summary says so
    until every tracked workflow's history is listed."""

    workflows: int  # tracked
    begun: int  # of them with some span listed
    done: int  # of them with their whole history listed
    listed_days: float  # summed over the tracked workflows, of ...
    history_days: float  # ... [the backfill's floor, now] each (0: no floor yet)
    around_listed_days: float  # summed over the tracked workflows, of ...
    around_days: float  # ... the windows around the configured events each (from the floor)
    # (workflow path, start, end): what the summary reads that no collect has listed yet
    missing: tuple[tuple[str, datetime, datetime], ...] = ()


@dataclass(frozen=True)
class Triage:
    """The triage section's lists (``triage_lists``): what is new since the last summary, the
    known issues, the recurring signatures nobody tracks, and what triage --post did."""

    new_from: pd.Timestamp  # the previous summary's post, else the summary's --since
    after_summary: bool  # whether ``new_from`` is a previous summary's post
    new: pd.DataFrame  # signature, category, failures, first_seen, line, issue_url; most first
    known: pd.DataFrame  # store.triage.TRIAGE_COLUMNS of linked ones, + recurred_after, recurred
    recurring: pd.DataFrame  # signature, category, line, failures, runs, waiting; largest first
    actions: pd.DataFrame  # store.triage.posted_actions since ``new_from``
    settings: TriageSettings
    branch: str


def triage_lists(
    signatures: pd.DataFrame,
    known: pd.DataFrame,
    stats: pd.DataFrame,
    steps: TriagePlan,
    actions: pd.DataFrame,
    *,
    new_from: pd.Timestamp,
    after_summary: bool,
    settings: TriageSettings,
    branch: str,
) -> Triage:
    """The triage section from ``signatures`` (store.page_queries.signature_summary of the
    runs since ``new_from`` or earlier: first_seen is the whole history's), ``known``
    (store.triage.triage_signatures of the summary's window), ``stats``
    (analytics.triage.signature_stats) and tonight's plan ``steps`` (its ``waiting`` and
    ``recurred``). New: first seen after ``new_from``, not NEW (analytics.newness)."""
    first = pd.to_datetime(signatures["first_seen"], utc=True)
    new = signatures.assign(first_seen=first)[first > new_from]
    new = new.sort_values(["failures", "first_seen"], ascending=[False, False], kind="stable")
    recurred = {step.signature: step for step in steps.recurred}
    linked = known[known["url"].notna()]
    linked = linked.assign(
        recurred_after=linked["signature"]
        .map({sig: step.issue_number for sig, step in recurred.items()})
        .astype("Int64"),
        recurred=linked["signature"].map({sig: step.why for sig, step in recurred.items()}),
    )
    linked = linked.assign(first=linked["recurred"].isna()).sort_values(
        ["first", "failures", "signature"], ascending=[True, False, True], kind="stable"
    )
    waiting = {step.signature for step in steps.waiting}
    over = recurring(stats)
    unlinked = over[~over.index.isin(known["signature"])].reset_index()
    unlinked = unlinked.assign(waiting=unlinked["signature"].isin(waiting))
    columns = ["signature", "category", "failures", "first_seen", "line", "issue_url"]
    return Triage(
        new_from=new_from,
        after_summary=after_summary,
        new=new[columns].reset_index(drop=True),
        known=linked.drop(columns=["first"]).reset_index(drop=True),
        recurring=unlinked[
            ["signature", "category", "line", "failures", "runs", "waiting"]
        ].reset_index(drop=True),
        actions=actions,
        settings=settings,
        branch=branch,
    )


@dataclass(frozen=True)
class SummaryData:
    """Everything the comment shows, as small tables; see ``summarise`` for their columns."""

    repo: str
    event: pd.Series | None  # one row of analytics.config_tables.event_table; None: no event
    since: pd.Timestamp
    now: pd.Timestamp
    window_days: int
    headline: pd.DataFrame
    strips: pd.DataFrame
    failures: pd.DataFrame
    coverage_lost: pd.DataFrame
    stale: pd.DataFrame
    health: pd.DataFrame  # analytics.health.health_table per side (before, after)
    environments: pd.DataFrame  # analytics.environments of the failures since ``since``
    last_collect: LastCollect | None
    triage: Triage
    # store.incidents.INCIDENT_COLUMNS of the incidents that hit a run shown after
    # ``triage.new_from`` (the last summary's post), oldest first
    incidents: pd.DataFrame
    runs_since: int = 0  # default-branch runs in scope created since ``since``
    backfill: Backfill | None = None  # None: every tracked workflow's history is listed
    # analytics.silence.silent_workflows: what the comment opens with
    silent: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SILENT_COLUMNS))


def stem(path: str) -> str:
    """A workflow's file name without folder and extension."""
    return path.rsplit("/", 1)[-1].removesuffix(".yml").removesuffix(".yaml")


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


def headline_table(sides: pd.DataFrame, min_runs: int, members: pd.DataFrame) -> pd.DataFrame:
    """Per lineage (and ``(all)``) and side: runs, success rate with Wilson interval, its
    label, the same with each incident counted once (``members``:
    store.incidents.load_members; analytics.once), and the workflows that ran. Columns:
    lineage, side, runs, label, runs_once, label_once, workflows."""
    everything = sides.assign(lineage="(all)")
    both = pd.concat([everything, sides], ignore_index=True)
    table = stability_once(both, run_incidents(both, members), ["lineage", "side"], min_runs)
    table["label"] = verdict_label(table)
    table["label_once"] = label_once(table, min_runs)
    names = both.groupby(["lineage", "side"])["workflow_path"].agg(
        lambda paths: ", ".join(sorted({stem(p) for p in paths}))
    )
    table["workflows"] = pd.MultiIndex.from_frame(table[["lineage", "side"]]).map(names)
    return table[["lineage", "side", "runs", "label", "runs_once", "label_once", "workflows"]]


def side_health(sides: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """analytics.health.health_table per side of ``sides`` (migration_sides): the job
    attempts of the runs on each side. Columns: side, analytics.health.HEALTH_COLUMNS."""
    return health_table(sides, attempts, ["side"])


def failure_groups(
    jobs: pd.DataFrame,
    failures: pd.DataFrame,
    since: pd.Timestamp,
    end: pd.Timestamp,
    first_seen: pd.Series,
    flagged: pd.DataFrame,
    members: pd.DataFrame,
) -> pd.DataFrame:
    """Failed logical jobs of runs created since ``since`` (plus runs that failed with no jobs),
    each in a group: NEW when its signature is NEW for the period ending at ``end``
    (analytics.newness, from ``first_seen``: signature -> first sighting in the whole
    history), else by its verdict with incidents counted once (analytics.verdicts,
    analytics.once.verdicts_once, ``members``: an incident's failure is INCIDENT, never
    FLAKY); ``failures``:
    store.page_queries.failure_details. Columns: group, created_at, workflow_path, logical_job,
    category, verdict, evidence, line, runner_name, html_url, stage, basis (of the failure's
    category, analytics.evidence; empty for a job with no classified failure), correction_note
    (a maintainer's, where the basis is "maintainer"), signature,
    works_elsewhere (from ``flagged``: analytics.elsewhere.failed_elsewhere(jobs,
    "runner_name"); False for a run without jobs)."""
    verdicts = verdicts_once(job_verdicts(jobs, failures), members)
    verdicts = verdicts.assign(verdict=verdicts["verdict_once"])
    recent = verdicts[verdicts["created_at"] >= since].reset_index(drop=True)
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
    runs_without_jobs = failures[(failures["job_id"] == 0) & (failures["created_at"] >= since)]
    run_rows = runs_without_jobs.assign(
        logical_job="(no jobs)", verdict="unclassified", evidence="the run failed with no jobs"
    )[job_rows.columns]
    rows = pd.concat([job_rows, run_rows], ignore_index=True)
    rows["works_elsewhere"] = _works_elsewhere(flagged, recent).reindex(
        rows.index, fill_value=False
    )
    sightings = pd.to_datetime(rows["signature"].map(first_seen.to_dict()), utc=True)
    new = rows["signature"].notna() & is_new(sightings, end)
    rows["group"] = filled(rows["verdict"].map(VERDICT_GROUPS), "OTHER").where(~new, "NEW")
    order = {group: rank for rank, group in enumerate(GROUPS)}
    rows = rows.assign(rank=rows["group"].map(order)).sort_values(
        ["rank", "created_at"], ascending=[True, False], kind="stable"
    )
    return rows.drop(columns=["rank"]).reset_index(drop=True)


def _works_elsewhere(flagged: pd.DataFrame, failed: pd.DataFrame) -> pd.Series:
    """Per row of ``failed`` (failed logical jobs), whether ``flagged`` says it works
    elsewhere."""
    keys = ["run_id", "workflow_path", "logical_job"]
    elsewhere = pd.MultiIndex.from_frame(flagged.loc[flagged["works_elsewhere"], keys])
    return pd.Series(pd.MultiIndex.from_frame(failed[keys]).isin(elsewhere), index=failed.index)


def stale_since(
    runs: pd.DataFrame,
    event_date: pd.Timestamp | None,
    reference: pd.Timestamp | None,
    stale_factor: float,
) -> pd.DataFrame:
    """The STALE workflows (analytics.staleness against ``reference``, the repository's
    newest run) that still ran after the event: the ones the change did not retire (without
    an event, every STALE one)."""
    stale = staleness(runs, "workflow_path", reference, stale_factor)
    stale = stale[stale["status"] == STALE]
    if event_date is not None:
        stale = stale[stale["last_run_at"] >= event_date]
    return stale.reset_index(drop=True)


def summarise(
    runs: pd.DataFrame,
    jobs: pd.DataFrame,
    failures: pd.DataFrame,
    event: pd.Series | None,
    renames: dict[str, dict[str, str]],
    settings: Analysis,
    *,
    repo: str,
    since: pd.Timestamp,
    now: pd.Timestamp,
    reference: pd.Timestamp | None,
    first_seen: pd.Series,
    attempts: pd.DataFrame,
    env_failures: pd.DataFrame,
    born: pd.Series,
    last_collect: LastCollect | None,
    triage: Triage,
    incidents: pd.DataFrame,
    members: pd.DataFrame,
    backfill: Backfill | None = None,
    silent: pd.DataFrame | None = None,
) -> SummaryData:
    """The comment's tables from logical runs and jobs in scope (analytics.frames), failure
    details (store.page_queries.failure_details), job attempts (store.frame_queries.load_jobs)
    and the failures since ``since`` with their environment (store.frame_queries.load_failures with
    ``env``), all of the lineages the event touches; ``reference``: the repository's newest
    run (STALE); ``first_seen``: signature -> first sighting in the whole history (NEW, up to
    ``now``); ``born``: workflow_path -> its first default-branch run ever (successors);
    ``incidents``: those since the last summary (store.incidents.incidents_hitting).
    ``members``: the incidents' failures (store.incidents.load_members), counted once.
    Without an ``event`` the headline's one side is ``since`` (the runs since ``since``), and
    there are no successors, coverage or health to compare. ``silent``: the SILENT workflows
    (analytics.silence), left out of the STALE ones."""
    recent = runs[runs["created_at"] >= since]
    if event is None:
        event_date, event_frame = None, event_table(())
        sides = recent.assign(side="since")
    else:
        event_date, event_frame = event["event_date"], event.to_frame().T.infer_objects()
        sides = migration_sides(runs, event_date, settings.window_days)
    diff = coverage_diff(
        jobs, event_frame, renames, window_days=settings.window_days, kinds=("migration",)
    )
    strips = successor_first_runs(
        runs, event_frame, settings.first_runs, settings.window_days, born=born
    )
    flagged = failed_elsewhere(jobs, "runner_name")
    silent = pd.DataFrame(columns=SILENT_COLUMNS) if silent is None else silent
    stale = stale_since(runs, event_date, reference, settings.stale_factor)
    return SummaryData(
        repo=repo,
        event=event,
        since=since,
        now=now,
        window_days=settings.window_days,
        headline=headline_table(sides, settings.min_runs, members),
        strips=strips,
        failures=failure_groups(jobs, failures, since, now, first_seen, flagged, members),
        coverage_lost=lost_jobs(diff),
        stale=stale[~stale["workflow_path"].isin(silent["workflow_path"])],
        health=side_health(sides, attempts),
        environments=environment_failures(env_failures, flagged),
        last_collect=last_collect,
        triage=triage,
        incidents=incidents,
        runs_since=len(recent),
        backfill=backfill,
        silent=silent,
    )
