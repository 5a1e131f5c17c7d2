"""``ciflake triage [--post]``: tonight's plan for one repository's recurring failure
signatures, printed, or done on GitHub. The shell joins the layers this needs: the store's
frames, analytics.triage's plan, reports.triage_body's issue and collector.triage_post's writes.

One ``--post`` per repository at a time: it holds the lease ``triage:OWNER/NAME`` (held by
host:pid, for LEASE_TTL, renewed before each write to GitHub: a night paced
``pause_seconds`` apart may take longer); a second one stops at once with one line and exit
code 2, since the first is doing the same writes. A lease whose holder died on this host, or
that expired, is taken over; its former holder stops before its next write."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from analytics.triage import TriagePlan
from collector.client import CollectError, GitHubClient
from collector.summary_post import token_login
from collector.triage_post import Poster, post_plan
from reports.triage_body import Signature, draft
from reports.triage_frames import triage_frames
from store.issues import holder_id, latest_context, release_lease, take_lease
from store.project import Project
from store.settings import Config, ConfigError

LEASE_TTL = timedelta(hours=1)


def _items(
    project: Project, failures: pd.DataFrame, stats: pd.DataFrame, now: datetime
) -> dict[str, Signature]:
    """What an issue would say about each signature with a deciding line in the window."""
    since = pd.Timestamp(now) - pd.Timedelta(days=project.triage.window_days)
    recent = failures[failures["created_at"] >= since]
    return {
        str(sig): Signature(
            signature=str(sig),
            category=str(row["category"]),
            line=str(row["line"]),
            failures=int(row["failures"]),
            runs=int(row["runs"]),
            first_seen=row["first_seen"],
            last_seen=row["last_seen"],
            window_days=project.triage.window_days,
            branch=project.default_branch,
            rows=recent[recent["signature"] == sig],
        )
        for sig, row in stats.iterrows()
    }


def tonight(
    engine: Engine, project: Project, now: datetime
) -> tuple[TriagePlan, dict[str, Signature]]:
    """The plan from what the store holds (GitHub's states as last read)."""
    frames = triage_frames(engine, project, now)
    items = _items(project, frames.failures, frames.stats, now)
    digests = {sig: draft(item).sha256 for sig, item in items.items()}
    return frames.plan(now, project.triage, digests), items


def describe(steps: TriagePlan, items: dict[str, Signature]) -> list[str]:
    """The plan, one line per step, as the dry run prints it."""
    lines = []
    for word, group in (
        ("file", steps.file),
        ("update", steps.update),
        ("close", steps.close),
        ("reopen", steps.reopen),
        ("waiting", steps.waiting),
        ("recurred", steps.recurred),
    ):
        for step in group:
            issue = f"#{step.issue_number} " if step.issue_number else ""
            item = items.get(step.signature)
            what = f" [{item.category}] {item.line[:100]}" if item else ""
            lines.append(f"{word}: {issue}{step.signature}{what} ({step.why})")
    return lines or ["nothing to do: no signature crosses the threshold, no issue to change"]


def run_triage(
    config: Config,
    project: Project,
    engine: Engine,
    *,
    post: bool,
    echo: Callable[[str], None],
    now: datetime | None = None,
) -> None:
    """Print tonight's plan, or (``post``) do it on GitHub, echoing a line per write."""
    now = now or datetime.now(UTC)
    if not post:
        steps, items = tonight(engine, project, now)
        for line in describe(steps, items):
            echo(line)
        return
    if config.token is None:
        raise ConfigError(
            "--post needs a token with `issues: write`: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE"
        )
    name, holder = f"triage:{project.repo}", holder_id()
    held_by = take_lease(engine, name, holder, LEASE_TTL)
    if held_by is not None:
        raise ConfigError(
            f"triage --post for {project.repo} is already running ({held_by}); not started"
        )
    try:
        client = GitHubClient(config.api_url, config.token, on_wait=echo)
        login = project.triage.login or token_login(client)
        pause = project.triage.pause_seconds
        lease = (name, holder, LEASE_TTL)
        poster = Poster(client, engine, project.repo, login, now, echo, pause, lease)
        issues = poster.refresh()
        steps, items = tonight(engine, project, now)
        drafts = {sig: draft(item) for sig, item in items.items()}
        for step in steps.file:  # the context, read only for the issues filed
            drafts[step.signature] = draft(_with_context(engine, project, items[step.signature]))
        post_plan(poster, steps, drafts, issues, project.triage.quiet_days)
        for step in steps.waiting:
            echo(f"waiting: {step.signature} ({step.why})")
    except CollectError as exc:
        raise ConfigError(f"triage not posted: {exc}") from None
    finally:
        release_lease(engine, name, holder)


def _with_context(engine: Engine, project: Project, item: Signature) -> Signature:
    return replace(item, context=tuple(latest_context(engine, project.repo, item.signature)))
