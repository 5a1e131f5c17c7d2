"""What the summary shows, as one value (``SummaryData``) that reports.summary_render writes:
the registry's tables (reports.summary reads them through reports.tables), the backfill's
progress and the triage section's lists (``triage_lists``, from tonight's plan)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from analytics.silence import SILENT_COLUMNS
from analytics.triage import TriagePlan, recurring
from store.bookkeeping import LastCollect
from store.project import TriageSettings


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
    """Everything the comment shows, as small tables, each the registry's
    (reports.night_tables' night-headline, night-health, night-failures, stale, silent;
    first-runs, coverage-lost, environments, incidents)."""

    repo: str
    event: pd.Series | None  # one row of analytics.config_tables.event_table; None: no event
    since: pd.Timestamp
    now: pd.Timestamp
    window_days: int
    headline: pd.DataFrame  # night-headline
    strips: pd.DataFrame  # first-runs, of the event
    failures: pd.DataFrame  # night-failures
    coverage_lost: pd.DataFrame  # coverage-lost, of the event
    stale: pd.DataFrame  # stale
    health: pd.DataFrame  # night-health: per side (before, after)
    environments: pd.DataFrame  # environments: of the failures since ``since``
    last_collect: LastCollect | None
    triage: Triage
    # the incidents table of the incidents that hit a run shown after
    # ``triage.new_from`` (the last summary's post), oldest first
    incidents: pd.DataFrame
    runs_since: int = 0  # night-runs' (all): default-branch runs in scope since ``since``
    backfill: Backfill | None = None  # None: every tracked workflow's history is listed
    # the silent table: what the comment opens with
    silent: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SILENT_COLUMNS))
