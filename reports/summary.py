"""The nightly summary's data: one Markdown comment about a migration (or, without one, about
what happened since --since), upserted on its PR.

Four steps in four modules, so the content is testable without a network: which event and
since when (reports.summary_target), the sections' tables from frames (``summarise``,
reports.summary_tables, pure), the Markdown (``render_summary``, reports.summary_render,
pure) and the comment on GitHub (collector.summary_post, run by ciflake.summary). This module
reads the store for them (``load_summary``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from analytics.config_tables import EventLike, event_table, job_renames
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.outcomes import in_scope, scope_terms
from analytics.silence import silent_workflows
from reports.freshness import collectable, not_on_github, uncollected
from reports.summary_tables import Backfill, SummaryData, Triage, summarise, triage_lists
from reports.summary_target import HISTORY_DAYS, pick_event
from reports.triage_frames import triage_frames
from store.backfill import Progress, Span, event_spans
from store.bookkeeping import last_collect, workflow_progress
from store.frame_queries import load_failures, load_jobs
from store.incidents import incidents_hitting, load_members
from store.page_queries import daily_run_counts, failure_details, run_span, signature_summary
from store.project import Project
from store.runfilter import RunFilter
from store.triage import last_summary_at, posted_actions, triage_signatures


def load_summary(
    engine: Engine,
    project: Project,
    events: Iterable[EventLike],
    *,
    pr: int | None,
    since: datetime,
    now: datetime,
) -> SummaryData:
    """The summary of the event made by ``pr`` (default: the latest migration), failures since
    ``since``; default-branch scope, the lineages the event touches. Without such an event:
    what happened since ``since`` over every tracked workflow."""
    event = pick_event(event_table(events), pr)
    start = pd.Timestamp(since) - pd.Timedelta(days=HISTORY_DAYS)
    if event is not None:
        start = min(start, event["event_date"] - pd.Timedelta(days=project.analysis.window_days))
    repo, branch = project.repo, project.default_branch
    where = RunFilter(repo, start.to_pydatetime(), None)
    runs = logical_run_frame(engine, project, where)
    jobs = logical_job_frame(engine, project, where, runs)
    lineages = () if event is None else event["event_lineages"]
    touched = lineages or tuple(w.lineage for w in project.workflows)
    runs = runs[in_scope(runs, "default", branch) & runs["lineage"].isin(touched)]
    jobs = jobs[in_scope(jobs, "default", branch) & jobs["lineage"].isin(touched)]
    failures = failure_details(engine, where)
    failures = failures[failures["run_id"].isin(runs["run_id"])]
    attempts = load_jobs(engine, where)
    attempts = attempts[attempts["run_id"].isin(runs["run_id"])]
    env = load_failures(engine, RunFilter(repo, since, None), detail=("env",))
    # new since the last summary counts from its post, else from ``since``
    previous = last_summary_at(engine, repo)
    new_from = pd.Timestamp(since if previous is None else previous)
    # NEW, and new since the last summary: each signature's first sighting in the whole
    # history, not only what was read
    signatures = signature_summary(engine, RunFilter(repo, min(new_from, since), None))
    _, newest = run_span(engine, repo)  # STALE: against the newest stored run
    paths = [w.path for w in project.workflows if w.lineage in touched]
    born = first_runs(engine, project, paths, start.to_pydatetime(), runs)
    # the incidents since the last summary: those with a failure in a default-branch run of
    # the lineages shown, created after its post (else after ``since``), as the new signatures
    triggers, on = scope_terms("default", branch)
    hit_from = RunFilter(repo, new_from.to_pydatetime(), None, tuple(paths), triggers, on)
    return summarise(
        runs.reset_index(drop=True),
        jobs.reset_index(drop=True),
        failures.reset_index(drop=True),
        event,
        job_renames(project.lineages),
        project.analysis,
        repo=repo,
        since=pd.Timestamp(since),
        now=pd.Timestamp(now),
        reference=None if newest is None else pd.Timestamp(newest),
        first_seen=signatures.set_index("signature")["first_seen"],
        attempts=attempts.reset_index(drop=True),
        born=born,
        env_failures=env[env["run_id"].isin(runs["run_id"])].reset_index(drop=True),
        last_collect=last_collect(engine, repo),
        triage=load_triage(engine, project, signatures, since, now, new_from, previous is not None),
        incidents=incidents_hitting(engine, hit_from),
        members=load_members(engine, where),
        backfill=backfill_progress(engine, project, paths, start.to_pydatetime(), now),
        silent=silent_workflows(engine, project),
    )


def load_triage(
    engine: Engine,
    project: Project,
    signatures: pd.DataFrame,
    since: datetime,
    now: datetime,
    new_from: pd.Timestamp,
    after_summary: bool,
) -> Triage:
    """The triage section: ``signatures`` (store.page_queries.signature_summary from
    ``new_from`` or earlier) new after ``new_from``; the known issues with their default-branch
    failures since ``since``; tonight's plan (analytics.triage) for the recurring ones, those
    waiting and those recurred; what triage --post did since ``new_from``."""
    events, branch = scope_terms("default", project.default_branch)
    known = triage_signatures(engine, RunFilter(project.repo, since, None, (), events, branch))
    frames = triage_frames(engine, project, now)
    steps = frames.plan(now, project.triage)
    return triage_lists(
        signatures,
        known,
        frames.stats,
        steps,
        posted_actions(engine, project.repo, new_from.to_pydatetime()),
        new_from=new_from,
        after_summary=after_summary,
        settings=project.triage,
        branch=project.default_branch,
    )


def first_runs(
    engine: Engine, project: Project, paths: list[str], start: datetime, runs: pd.DataFrame
) -> pd.Series:
    """workflow_path -> its first default-branch run: the first in ``runs`` (read from
    ``start``), else the first day with a run before ``start`` (counted in SQL)."""
    events, branch = scope_terms("default", project.default_branch)
    where = RunFilter(project.repo, None, start, tuple(paths), events, branch)
    earlier = daily_run_counts(engine, where).groupby("workflow_path")["day"].min()
    since_start = runs.groupby("workflow_path")["created_at"].min()
    return pd.concat([earlier, since_start]).groupby(level=0).min()


def backfill_progress(
    engine: Engine, project: Project, read: Iterable[str], start: datetime, now: datetime
) -> Backfill | None:
    """How far the first collects of the tracked workflows have come (None: all done): days
    listed of [the backfill's floor, now], the windows around the events, and the spans of
    [start, now] of the workflows ``read`` that no collect has listed yet."""
    tracked = collectable(project, not_on_github(engine, project))
    progress = {
        path: listed
        for path, listed in workflow_progress(engine, project.repo).items()
        if path in tracked
    }
    missing = uncollected(progress, [path for path in read if path in tracked], start, now)
    done = sum(p.complete for p in progress.values())
    if done == len(tracked) and not missing:
        return None
    floor = min((p.floor for p in progress.values() if p.floor is not None), default=None)
    spans = event_spans((e.date for e in project.events), project.analysis.window_days)
    history: list[Span] = [] if floor is None else [(floor, now)]
    around = [(max(a, floor), min(b, now)) for a, b in spans] if floor is not None else []
    listed_days, history_days = _days_listed(list(progress.values()), history, len(tracked))
    around_listed, around_days = _days_listed(list(progress.values()), around, len(tracked))
    return Backfill(
        workflows=len(tracked),
        begun=len(progress),
        done=done,
        listed_days=listed_days,
        history_days=history_days,
        around_listed_days=around_listed,
        around_days=around_days,
        missing=missing,
    )


def _days_listed(begun: list[Progress], spans: list[Span], workflows: int) -> tuple[float, float]:
    """Days of ``spans`` listed by the backfills ``begun`` (the other tracked workflows have
    listed none), and days of ``spans`` over all ``workflows``."""
    day = timedelta(days=1)
    spans = [(a, b) for a, b in spans if a < b]
    length = sum((b - a for a, b in spans), timedelta(0)) / day
    unlisted = sum(
        (b - a for p in begun for span in spans for a, b in p.missing(span)), timedelta(0)
    )
    return length * len(begun) - unlisted / day, length * workflows
