"""``ciflake summary``: one Markdown comment about a migration, upserted on its PR every night.

Four steps in four modules, so the content is testable without a network: which event and
since when (collector.summary_target), the sections' tables from frames (``summarise``,
collector.summary_tables, pure), the Markdown (``render_summary``, collector.summary_render,
pure) and the comment on GitHub (collector.summary_post). This module reads the store for them
(``load_summary``) and runs the command (``run_summary``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from analytics.config_tables import EventLike, event_table, job_renames
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.outcomes import in_scope, scope_terms
from collector.backfill import progress_of
from collector.client import CollectError, GitHubClient
from collector.summary_post import foreign_line, post_summary
from collector.summary_render import render_summary
from collector.summary_tables import SummaryData, SummarySettings, summarise
from collector.summary_target import HISTORY_DAYS, parse_since, pick_event, target_number
from store.bookkeeping import last_sync, workflow_sync_states
from store.frame_queries import load_failures, load_jobs
from store.page_queries import daily_run_counts, failure_details, run_span, signature_summary
from store.runfilter import RunFilter
from store.settings import Config, ConfigError

log = logging.getLogger(__name__)


def load_summary(
    engine: Engine,
    config: Config,
    events: Iterable[EventLike],
    *,
    pr: int | None,
    since: datetime,
    now: datetime,
) -> SummaryData:
    """The summary of the event made by ``pr`` (default: the latest migration), failures since
    ``since``; default-branch scope, the lineages the event touches."""
    event = pick_event(event_table(events), pr)
    window = pd.Timedelta(days=config.window_days)
    history = pd.Timedelta(days=HISTORY_DAYS)
    start = min(event["event_date"] - window, pd.Timestamp(since) - history)
    where = RunFilter(config.repo, start.to_pydatetime(), None)
    runs = logical_run_frame(engine, config, where)
    jobs = logical_job_frame(engine, config, where, runs)
    touched = event["event_lineages"] or tuple(w.lineage for w in config.workflows)
    runs = runs[in_scope(runs, "default", config.default_branch) & runs["lineage"].isin(touched)]
    jobs = jobs[in_scope(jobs, "default", config.default_branch) & jobs["lineage"].isin(touched)]
    failures = failure_details(engine, where)
    failures = failures[failures["run_id"].isin(runs["run_id"])]
    attempts = load_jobs(engine, where)
    attempts = attempts[attempts["run_id"].isin(runs["run_id"])]
    env = load_failures(engine, RunFilter(config.repo, since, None), detail=("env",))
    # NEW: the first sighting of each signature in the whole history, not only what was read
    first_seen = signature_summary(engine, RunFilter(config.repo, since, None))
    _, newest = run_span(engine, config.repo)  # STALE: against the newest stored run
    paths = [w.path for w in config.workflows if w.lineage in touched]
    born = first_runs(engine, config, paths, start.to_pydatetime(), runs)
    sync = last_sync(engine, config.repo)
    missing = uncollected(engine, config.repo, paths, start.to_pydatetime(), now)
    return summarise(
        runs.reset_index(drop=True),
        jobs.reset_index(drop=True),
        failures.reset_index(drop=True),
        event,
        job_renames(config.lineages),
        SummarySettings.of(config),
        repo=config.repo,
        since=pd.Timestamp(since),
        now=pd.Timestamp(now),
        reference=None if newest is None else pd.Timestamp(newest),
        first_seen=first_seen.set_index("signature")["first_seen"],
        attempts=attempts.reset_index(drop=True),
        born=born,
        env_failures=env[env["run_id"].isin(runs["run_id"])].reset_index(drop=True),
        last_collect=None if sync is None else (sync.finished_at or sync.started_at),
        uncollected=missing,
    )


def first_runs(
    engine: Engine, config: Config, paths: list[str], start: datetime, runs: pd.DataFrame
) -> pd.Series:
    """workflow_path -> its first default-branch run: the first in ``runs`` (read from
    ``start``), else the first day with a run before ``start`` (counted in SQL)."""
    events, branch = scope_terms("default", config.default_branch)
    where = RunFilter(config.repo, None, start, tuple(paths), events, branch)
    earlier = daily_run_counts(engine, where).groupby("workflow_path")["day"].min()
    since_start = runs.groupby("workflow_path")["created_at"].min()
    return pd.concat([earlier, since_start]).groupby(level=0).min()


def uncollected(
    engine: Engine, repo: str, paths: Iterable[str], start: datetime, now: datetime
) -> tuple[tuple[str, datetime, datetime], ...]:
    """The spans of [start, now] that a backfill still has to list, per workflow path; a
    workflow never collected is missing whole."""
    states = workflow_sync_states(engine, repo)
    gaps = []
    for path in paths:
        state = states.get(path)
        if state is None:
            gaps.append((path, start, now))
            continue
        progress = progress_of(state.window_start, state.backfill, state.watermark)
        listed_to = max((end for _, end in progress.done), default=start)
        # the newest window ends when it was listed: what came after is the next collect's
        gaps += [(path, a, b) for a, b in progress.missing((start, max(start, listed_to)))]
        if not progress.complete and listed_to < now - timedelta(days=1):
            gaps.append((path, listed_to, now))
    return tuple(gaps)


def run_summary(
    config: Config,
    engine: Engine,
    events: Iterable[EventLike],
    *,
    pr: int | None,
    issue: int | None,
    since: str,
    post: bool,
    now: datetime | None = None,
) -> str:
    """What ``ciflake summary`` prints: the Markdown, or with ``post`` one line saying which
    comment was created or edited (and one naming the comments of others that carry the
    marker, left alone). Problems come back as one ConfigError line, token-free."""
    now = now or datetime.now(UTC)
    data = load_summary(engine, config, events, pr=pr, since=parse_since(since, now), now=now)
    body = render_summary(data)
    if not post:
        return body
    if data.uncollected:  # posted as soon as the backfill has listed what it reads
        path, start, end = data.uncollected[0]
        return (
            f"summary not posted: the backfill has not collected {path} from {start:%Y-%m-%d} "
            f"to {end:%Y-%m-%d} yet ({len(data.uncollected)} spans left); the next collects "
            "go on, and `ciflake summary` without --post shows it as it stands"
        )
    if config.token is None:
        raise ConfigError("--post needs a token: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE")
    number = target_number(config, data.event, pr, issue)
    client = GitHubClient(config.api_url, config.token, on_wait=log.warning)
    try:
        action, url, foreign = post_summary(client, engine, config.repo, number, body)
    except CollectError as exc:
        raise ConfigError(f"summary not posted: {exc}") from None
    done = f"{action} the summary comment on #{number}: {url}"
    return f"{done}\n{foreign_line(foreign)}" if foreign else done
