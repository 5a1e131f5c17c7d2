"""The nightly summary's data: one Markdown comment about a migration (or, without one, about
what happened since --since), upserted on its PR.

Four steps in four modules, so the content is testable without a network: which event and
since when (reports.summary_target), the sections' tables, each the registry's
(reports.tables: the night's of reports.night_tables and the others' by name), gathered in one
value (reports.summary_tables), the Markdown (``render_summary``, reports.summary_render, pure)
and the comment on GitHub (collector.summary_post, run by ciflake.summary). This module reads
them (``load_summary``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from analytics.config_tables import EventLike, event_table
from reports import tables
from reports.freshness import collectable, not_on_github, uncollected
from reports.query import Query
from reports.summary_tables import Backfill, SummaryData, Triage, triage_lists
from reports.summary_target import HISTORY_DAYS, pick_event
from reports.triage_frames import triage_frames
from store.backfill import Progress, Span, event_spans
from store.bookkeeping import last_collect, workflow_progress
from store.project import Project
from store.triage import last_summary_at, posted_actions


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
    what happened since ``since`` over every tracked workflow. Every table is the registry's
    (reports.tables: reports.night_tables, and the others' by name)."""
    event = pick_event(event_table(events), pr)
    lineages = () if event is None else event["event_lineages"]
    touched = lineages or tuple(w.lineage for w in project.workflows)
    paths = [w.path for w in project.workflows if w.lineage in touched]
    event_date = None if event is None else event["event_date"].to_pydatetime()
    query = Query(since, None, tuple(paths), "default", event_date=event_date, as_of=now)
    # new since the last summary counts from its post, else from ``since``
    previous = last_summary_at(engine, project.repo)
    new_from = pd.Timestamp(since if previous is None else previous)

    def table(name: str, **changes: object) -> pd.DataFrame:
        return tables.build(engine, project, name, replace(query, **changes))  # type: ignore[arg-type]

    # NEW, and new since the last summary: each signature's first sighting in the whole
    # history, not only what was read
    signatures = table(
        "signatures",
        since=min(new_from, pd.Timestamp(since)).to_pydatetime(),
        paths=(),
        scope="all",
    )
    # the coverage a migration lost and the first runs of the workflows an event created:
    # tables of every event, cut to this one; not read when it has none
    lost = _none("coverage-lost")
    if event is not None and event["event_kind"] == "migration":
        lost = table("coverage-lost")
        lost = lost[lost["event_date"] == event["event_date"]].reset_index(drop=True)
    strips = _none("first-runs")
    if event is not None:
        strips = table("first-runs", since=None)
        made = (strips["event_date"] == event["event_date"]) & (
            strips["event_title"] == event["event_title"]
        )
        strips = strips[made].reset_index(drop=True)
    runs_since = table("night-runs")
    return SummaryData(
        repo=project.repo,
        event=event,
        since=pd.Timestamp(since),
        now=pd.Timestamp(now),
        window_days=project.analysis.window_days,
        headline=table("night-headline"),
        strips=strips,
        failures=table("night-failures"),
        coverage_lost=lost,
        stale=table("stale"),
        health=table("night-health"),
        environments=table("environments"),
        last_collect=last_collect(engine, project.repo),
        triage=load_triage(engine, project, signatures, since, now, new_from, previous is not None),
        # the incidents since the last summary: those with a failure in a default-branch run
        # of the lineages shown, created after its post (else after ``since``)
        incidents=table("incidents", since=new_from.to_pydatetime()),
        runs_since=int(runs_since.loc[runs_since["lineage"] == "(all)", "runs"].sum()),
        backfill=backfill_progress(engine, project, paths, _start(project, event, since), now),
        silent=table("silent"),
    )


def _none(name: str) -> pd.DataFrame:
    """The table ``name`` without a row (its columns)."""
    return pd.DataFrame(columns=tables.TABLES[name].columns)


def _start(project: Project, event: pd.Series | None, since: datetime) -> datetime:
    start = pd.Timestamp(since) - pd.Timedelta(days=HISTORY_DAYS)
    if event is not None:
        start = min(start, event["event_date"] - pd.Timedelta(days=project.analysis.window_days))
    return start.to_pydatetime()


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
    known = tables.build(engine, project, "known-issues", Query(since))
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
