"""``ciflake summary``: one Markdown comment about a migration, upserted on its PR every night.

Three steps, so the content is testable without a network: ``load_summary`` reads the store,
``summarise`` (pure) turns frames into the sections' tables, ``render_summary`` (pure) writes the
Markdown, shortened to GitHub's 65,536 characters. ``post_summary`` edits the one comment that
starts with MARKER and is by the token's user (``GET /user``; ``github-actions[bot]`` for a
workflow's token), or creates it (PyTorch Dr.CI's single upserted comment); a marked comment by
anyone else is left alone and reported, and a POST that may have failed is retried only after
the comments were listed again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import requests
from github.Requester import Requester
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from analytics.coverage import coverage_diff, lost_jobs
from analytics.evidence import describe, failure_basis, unknown_reason
from analytics.health import stale_workflows
from analytics.outcomes import in_scope
from analytics.rates import stability, verdict_label
from analytics.setup import EventLike, event_table, job_renames
from analytics.verdicts import job_verdicts
from ciflake.config import Config, ConfigError, parse_datetime
from collector.backfill import progress_of
from collector.client import (
    SECONDARY_MESSAGE,
    BadCredentials,
    CollectError,
    Forbidden,
    GitHubClient,
)
from collector.frames import logical_job_frame, logical_run_frame
from collector.markdown import code_block, details, link, md_text
from store.models import PostedComment
from store.queries import RunFilter, failure_details, last_sync, workflow_sync_states
from store.upsert import upsert

log = logging.getLogger(__name__)

MARKER = "<!-- ciflake:summary -->"
NEW_DAYS = 21  # Treeherder: a failure line unseen for 21 days is new
FOLD_AFTER = 5  # a section with more items than this folds into <details>
MAX_FAILURES = 15  # per group, so the comment stays far below GitHub's 65,536 characters
BODY_LIMIT = 65_536  # GitHub refuses a longer comment body (422 "body is too long")
SYMBOLS = {"pass": "✅", "flaky": "🔁", "fail": "❌"}
# Failure groups in the order shown; a NEW signature wins over the verdict.
GROUPS = {
    "NEW": "🆕 NEW signature (not seen in the 21 days before)",
    "PERSISTENT": "🟥 PERSISTENT (the neighbouring run failed too)",
    "FLAKY": "🔁 FLAKY (passed on a rerun or on the same commit)",
    "INFRA/ENV": "🛠️ INFRA/ENV (runner, NPU environment, network, timeout)",
    "OTHER": "❔ ONE-OFF or UNCLASSIFIED",
}
VERDICT_GROUPS = {"persistent": "PERSISTENT", "flaky": "FLAKY", "infra": "INFRA/ENV"}
SINCE_PATTERN = re.compile(r"(\d+)\s*([hd])")


@dataclass(frozen=True)
class SummaryData:
    """Everything the comment shows, as small tables; see ``summarise`` for their columns."""

    repo: str
    event: pd.Series  # one row of analytics.setup.event_table
    since: pd.Timestamp
    now: pd.Timestamp
    window_days: int
    headline: pd.DataFrame
    strips: pd.DataFrame
    failures: pd.DataFrame
    coverage_lost: pd.DataFrame
    stale: pd.DataFrame
    last_collect: datetime | None
    # (workflow path, start, end): what the summary reads that no collect has listed yet
    uncollected: tuple[tuple[str, datetime, datetime], ...] = ()


@dataclass(frozen=True)
class SummarySettings:
    window_days: int
    first_runs: int
    min_runs: int
    stale_factor: float
    default_branch: str

    @classmethod
    def of(cls, config: Config) -> SummarySettings:
        return cls(
            config.window_days,
            config.first_runs,
            config.min_runs,
            config.stale_factor,
            config.default_branch,
        )


# ---- choosing what to summarise -------------------------------------------------------------


def parse_since(text: str, now: datetime) -> datetime:
    """``24h``, ``7d`` (before ``now``) or a date / ISO time (UTC)."""
    match = SINCE_PATTERN.fullmatch(text.strip())
    if match is None:
        return parse_datetime(text, "--since")
    amount, unit = int(match[1]), match[2]
    return now - (timedelta(hours=amount) if unit == "h" else timedelta(days=amount))


def pick_event(events: pd.DataFrame, pr: int | None) -> pd.Series:
    """The change event made by PR ``pr``, or the latest migration event."""
    if pr is not None:
        chosen = events[events["event_pr"] == pr]
        if chosen.empty:
            raise ConfigError(f"no change event for PR #{pr} (see: ciflake events list)")
    else:
        chosen = events[events["event_kind"] == "migration"]
        if chosen.empty:
            raise ConfigError("no migration event in the config (or use --pr N)")
    return chosen.iloc[-1]


def target_number(config: Config, event: pd.Series, pr: int | None, issue: int | None) -> int:
    """Where to post: --issue, --pr, the config's [summary] pr, else the event's PR."""
    for number in (issue, pr, config.summary_pr, event["event_pr"]):
        if number is not None and not pd.isna(number):
            return int(number)
    raise ConfigError("nowhere to post: give --pr N or --issue N, or set [summary] pr")


# ---- the sections, from frames (pure) -------------------------------------------------------


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


def headline_table(sides: pd.DataFrame, min_runs: int) -> pd.DataFrame:
    """Per lineage (and ``(all)``) and side: runs, success rate with Wilson interval, its
    label, and the workflows that ran. Columns: lineage, side, runs, label, workflows."""
    everything = sides.assign(lineage="(all)")
    both = pd.concat([everything, sides], ignore_index=True)
    table = stability(both, ["lineage", "side"], min_runs)
    table["label"] = verdict_label(table)
    names = both.groupby(["lineage", "side"])["workflow_path"].agg(
        lambda paths: ", ".join(sorted({_stem(p) for p in paths}))
    )
    table["workflows"] = pd.MultiIndex.from_frame(table[["lineage", "side"]]).map(names)
    return table[["lineage", "side", "runs", "label", "workflows"]]


def first_run_strips(sides: pd.DataFrame, first_runs: int) -> pd.DataFrame:
    """The first ``first_runs`` counted runs of each successor workflow since the event.
    Columns: workflow_path, logical_outcome, html_url, created_at."""
    after = sides[(sides["side"] == "after") & (sides["logical_outcome"] != "excluded")]
    first = after.sort_values(["created_at", "run_id"]).groupby("workflow_path").head(first_runs)
    return first[["workflow_path", "logical_outcome", "html_url", "created_at"]]


def failure_groups(
    jobs: pd.DataFrame, failures: pd.DataFrame, since: pd.Timestamp, new_days: int = NEW_DAYS
) -> pd.DataFrame:
    """Failed logical jobs of runs created since ``since`` (plus runs that failed with no jobs),
    each in a group: NEW when its signature did not occur in the ``new_days`` before ``since``,
    else by its verdict (analytics.verdicts); ``failures``: store.queries.failure_details.
    Columns: group, created_at, workflow_path, logical_job, category, verdict, evidence, line,
    runner_name, html_url, stage, basis (of the failure's category, analytics.evidence; empty
    for a job with no classified failure)."""
    verdicts = job_verdicts(jobs, failures)
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
    )
    runs_without_jobs = failures[(failures["job_id"] == 0) & (failures["created_at"] >= since)]
    run_rows = runs_without_jobs.assign(
        logical_job="(no jobs)", verdict="unclassified", evidence="the run failed with no jobs"
    )[job_rows.columns]
    rows = pd.concat([job_rows, run_rows], ignore_index=True)
    earlier = failures[
        (failures["created_at"] >= since - pd.Timedelta(days=new_days))
        & (failures["created_at"] < since)
    ]
    new = rows["signature"].notna() & ~rows["signature"].isin(earlier["signature"])
    rows["group"] = rows["verdict"].map(VERDICT_GROUPS).fillna("OTHER").where(~new, "NEW")
    order = {group: rank for rank, group in enumerate(GROUPS)}
    rows = rows.assign(rank=rows["group"].map(order)).sort_values(
        ["rank", "created_at"], ascending=[True, False], kind="stable"
    )
    return rows.drop(columns=["rank", "signature"]).reset_index(drop=True)


def summarise(
    runs: pd.DataFrame,
    jobs: pd.DataFrame,
    failures: pd.DataFrame,
    event: pd.Series,
    renames: dict[str, dict[str, str]],
    settings: SummarySettings,
    *,
    repo: str,
    since: pd.Timestamp,
    now: pd.Timestamp,
    last_collect: datetime | None,
    uncollected: tuple[tuple[str, datetime, datetime], ...] = (),
) -> SummaryData:
    """The comment's tables from logical runs and jobs in scope (collector.frames) and failure
    details (store.queries.failure_details), all of the lineages the event touches."""
    sides = migration_sides(runs, event["event_date"], settings.window_days)
    diff = coverage_diff(
        jobs,
        event.to_frame().T.infer_objects(),
        renames,
        window_days=settings.window_days,
        kinds=("migration",),
    )
    stale = stale_workflows(runs, now, settings.stale_factor)
    stale = stale[(stale["status"] == "STALE") & (stale["last_run_at"] >= event["event_date"])]
    return SummaryData(
        repo=repo,
        event=event,
        since=since,
        now=now,
        window_days=settings.window_days,
        headline=headline_table(sides, settings.min_runs),
        strips=first_run_strips(sides, settings.first_runs),
        failures=failure_groups(jobs, failures, since),
        coverage_lost=lost_jobs(diff),
        stale=stale.reset_index(drop=True),
        last_collect=last_collect,
        uncollected=uncollected,
    )


# ---- Markdown (pure) ------------------------------------------------------------------------


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".yml").removesuffix(".yaml")


def _when(moment: Any) -> str:
    return pd.Timestamp(moment).strftime("%Y-%m-%d %H:%M UTC") if not pd.isna(moment) else "?"


def _folded(heading: str, items: list[str], what: str) -> str:
    """``heading`` then the items, folded under "show N what" when there are many (N does
    not count a closing "… and N more" item)."""
    body = "\n".join(items)
    if len(items) > FOLD_AFTER:
        shown = len([item for item in items if not item.startswith("- … and ")])
        body = details(f"show {shown} {what}", body)
    return f"{heading}\n\n{body}"


def _headline(data: SummaryData) -> str:
    event = data.event
    pr = f"#{int(event['event_pr'])}" if not pd.isna(event["event_pr"]) else "the change"
    lines = [
        f"## ciflake: CI since {pr}, {md_text(event['event_title'])}",
        "",
        f"Merged {_when(event['event_date'])}. Default-branch runs (push, schedule, "
        "workflow_dispatch); success = passed on the first attempt, with a 95% Wilson interval.",
        "",
    ]
    table = data.headline.set_index(["lineage", "side"])
    if ("(all)", "after") not in table.index:
        return "\n".join([*lines, "No successor workflow has run since the change."])
    after = table.loc[("(all)", "after")]
    before_label = (
        table.loc[("(all)", "before"), "label"] if ("(all)", "before") in table.index else "no runs"
    )
    lines += [
        f"**Successors since the change: {after['label']}** vs predecessors in the "
        f"{data.window_days} days before: {before_label}.",
        "",
        "| lineage | before: predecessors | since: successors |",
        "| --- | --- | --- |",
    ]
    for lineage in [name for name in table.index.unique("lineage") if name != "(all)"]:
        cells = [_side_cell(table, lineage, side) for side in ("before", "after")]
        lines.append(f"| {md_text(lineage)} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def _side_cell(table: pd.DataFrame, lineage: str, side: str) -> str:
    if (lineage, side) not in table.index:
        return "no runs"
    row = table.loc[(lineage, side)]
    return f"{row['label']} · {md_text(row['workflows'])}"


def _strips(data: SummaryData) -> str:
    if data.strips.empty:
        return ""
    lines = ["### First runs of each successor (✅ pass · 🔁 passed on a rerun · ❌ fail)", ""]
    for path, runs in data.strips.groupby("workflow_path", sort=True):
        strip = "".join(
            link(SYMBOLS[outcome], url)
            for outcome, url in zip(runs["logical_outcome"], runs["html_url"], strict=True)
        )
        passed = int((runs["logical_outcome"] == "pass").sum())
        lines.append(
            f"- {md_text(_stem(path))}: {strip} ({passed}/{len(runs)} first-attempt green)"
        )
    return "\n".join(lines)


def _category(row: pd.Series) -> str:
    """The failure's category; for an unknown one, why (analytics.evidence.unknown_reason)."""
    if not isinstance(row["category"], str):
        return "not classified"
    reason = unknown_reason(row["stage"], row["basis"]) if isinstance(row["basis"], str) else ""
    return md_text(reason) if reason else f"`{row['category']}`"


def _failure_item(row: pd.Series) -> str:
    where = f"{md_text(_stem(row['workflow_path']))} / {md_text(row['logical_job'])}"
    facts = [
        f"**{where}**",
        _category(row),
        f"{row['verdict']}: {md_text(row['evidence'])}",
        f"runner {md_text(row['runner_name'])}" if isinstance(row["runner_name"], str) else "",
        link("job", row["html_url"]),
        _when(row["created_at"]),
    ]
    item = "- " + " · ".join(fact for fact in facts if fact)
    line = row["line"] if isinstance(row["line"], str) and row["line"].strip() else None
    return item + ("\n\n" + code_block(line, indent="  ") + "\n" if line else "")


def _failures(data: SummaryData, cap: int = MAX_FAILURES) -> str:
    """The failures, at most ``cap`` per group."""
    rows = data.failures
    title = f"### Failures since {_when(data.since)}: {len(rows)}"
    if rows.empty:
        return f"{title}\n\nNo failed job on the default branch. 🎉"
    counts = rows["group"].value_counts()
    overview = " · ".join(f"**{group}** {counts[group]}" for group in GROUPS if group in counts)
    parts = [title, "", overview, "", f"How much of this is known: {describe(rows['basis'])}."]
    for group, heading in GROUPS.items():
        chosen = rows[rows["group"] == group]
        if chosen.empty:
            continue
        items = [_failure_item(row) for _, row in chosen.head(cap).iterrows()]
        if len(chosen) > cap:
            items.append(f"- … and {len(chosen) - cap} more (`ciflake export failures`)")
        parts += ["", _folded(f"#### {heading}: {len(chosen)}", items, "failures")]
    return "\n".join(parts)


def _coverage(data: SummaryData, cap: int | None = None) -> str:
    """The jobs the change lost, at most ``cap`` of them (None: all)."""
    lost = data.coverage_lost
    if lost.empty:
        return "### Coverage lost by the change\n\nNone: every job that ran before has a successor."
    items = [
        f"- {md_text(row['lineage'])} / {md_text(row['logical_job'])}: ran "
        f"{row['before_runs']}× in the {data.window_days} days before, the last time in "
        f"{md_text(_stem(row['last_workflow_path']))} on {_when(row['last_run_at'])}"
        for _, row in lost.head(len(lost) if cap is None else cap).iterrows()
    ]
    if len(items) < len(lost):
        items.append(f"- … and {len(lost) - len(items)} more")
    return _folded(f"### Coverage lost by the change: {len(lost)} jobs", items, "jobs")


def _stale(data: SummaryData, cap: int | None = None) -> str:
    """The workflows that stopped running, at most ``cap`` of them (None: all)."""
    if data.stale.empty:
        return ""
    items = [
        f"- **STALE** {md_text(_stem(row['workflow_path']))}: no run for "
        f"{row['silent_hours']:.0f} h (usually every {row['usual_gap_hours']:.0f} h), last "
        f"{_when(row['last_run_at'])}"
        for _, row in data.stale.head(len(data.stale) if cap is None else cap).iterrows()
    ]
    if len(items) < len(data.stale):
        items.append(f"- … and {len(data.stale) - len(items)} more")
    return _folded("### Workflows that stopped running", items, "workflows")


def _freshness(data: SummaryData) -> str:
    if data.last_collect is None:
        collected = "no successful collect recorded"
    else:
        hours = (data.now - pd.Timestamp(data.last_collect)).total_seconds() / 3600
        collected = f"last successful collect {_when(data.last_collect)} ({hours:.1f} h ago)"
    return (
        f"<sub>Data: {md_text(data.repo)}, {collected}.{_backfill_note(data)} Generated "
        f"{_when(data.now)} by ciflake; this comment is edited in place.</sub>"
    )


def _backfill_note(data: SummaryData) -> str:
    if not data.uncollected:
        return ""
    first = data.uncollected[0]
    more = f" and {len(data.uncollected) - 1} more spans" if len(data.uncollected) > 1 else ""
    return (
        f" Backfill in progress: {md_text(_stem(first[0]))} {_when(first[1])} to "
        f"{_when(first[2])}{more} not collected yet; the figures leave them out."
    )


def github_length(text: str) -> int:
    """``text``'s length as GitHub may count it: UTF-16 code units, never fewer than the code
    points, so a body that fits by this measure fits by either."""
    return len(text.encode("utf-16-le")) // 2


# Sections that can be shortened, longest first when it must: name -> (what they list, renderer).
TRIMMABLE: dict[str, tuple[str, Any]] = {
    "failures": ("failures per group", _failures),
    "coverage": ("jobs of the coverage lost", _coverage),
    "stale": ("stopped workflows", _stale),
}
# Dropped whole, in this order, when the shortened lists are still too long (never the headline).
DROPPABLE = ("stale", "coverage", "strips", "failures")


def _sizes(data: SummaryData) -> dict[str, int]:
    """How many items each trimmable section has (failures: its largest group)."""
    groups = data.failures["group"].value_counts()
    return {
        "failures": min(MAX_FAILURES, int(groups.max()) if len(groups) else 0),
        "coverage": len(data.coverage_lost),
        "stale": len(data.stale),
    }


def _compose(data: SummaryData, caps: dict[str, int], dropped: list[str], cut: str) -> str:
    sections = {
        "headline": _headline(data),
        "strips": _strips(data),
        **{name: render(data, caps[name]) for name, (_, render) in TRIMMABLE.items()},
    }
    body = [text for name, text in sections.items() if text and name not in dropped]
    return "\n\n".join([MARKER + "\n" + body[0], *body[1:], *([cut] if cut else [])]) + (
        f"\n\n{_freshness(data)}\n"
    )


def _cut_line(full: int, sizes: dict[str, int], caps: dict[str, int], dropped: list[str]) -> str:
    """The line saying what was cut to fit BODY_LIMIT."""
    cuts = [
        f"{caps[name]} of {sizes[name]} {what} shown"
        for name, (what, _) in TRIMMABLE.items()
        if caps[name] < sizes[name] and name not in dropped
    ]
    cuts += [f"the {name} section left out" for name in dropped]
    return (
        f"✂️ **Cut to fit GitHub's {BODY_LIMIT:,}-character limit** (the whole summary has "
        f"{full:,}): {'; '.join(cuts)}. Every failure: `ciflake export failures`."
    )


def render_summary(data: SummaryData, limit: int | None = BODY_LIMIT) -> str:
    """The comment's Markdown, starting with MARKER; every foreign text neutralised. Over
    ``limit`` (GitHub's, by default; None: no limit) the longest lists are shortened, then
    whole sections left out, and a line says what was cut. Each list stays folded under
    <details> and every cut is at an item's end, so the Markdown renders as before."""
    sizes = _sizes(data)
    caps, dropped = dict(sizes), []
    text = _compose(data, caps, dropped, "")
    full = github_length(text)
    if limit is None or full <= limit:
        return text
    while True:
        text = _compose(data, caps, dropped, _cut_line(full, sizes, caps, dropped))
        excess = github_length(text) - limit
        if excess <= 0:
            return text
        lengths = {
            name: github_length(render(data, caps[name]))
            for name, (_, render) in TRIMMABLE.items()
            if caps[name] > 0 and name not in dropped
        }
        if lengths:  # shorten the longest, down to the next longest or by its share
            name = max(lengths, key=lengths.__getitem__)
            others = [size for other, size in lengths.items() if other != name]
            share = max(min(excess, lengths[name] - max(others, default=0)), excess // len(lengths))
            shown = caps[name]
            caps[name] = max(0, shown - max(1, -(-shown * share // lengths[name])))
        elif len(dropped) < len(DROPPABLE):
            dropped.append(DROPPABLE[len(dropped)])
        else:  # only the headline is left and it is too long: say so, no more
            cut = _cut_line(full, sizes, caps, dropped)
            return f"{MARKER}\n{cut} The headline did not fit either.\n\n{_freshness(data)}\n"


# ---- reading the store and posting ----------------------------------------------------------


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
    start = min(event["event_date"] - window, pd.Timestamp(since) - pd.Timedelta(days=NEW_DAYS))
    where = RunFilter(config.repo, start.to_pydatetime(), None)
    runs = logical_run_frame(engine, config, where)
    jobs = logical_job_frame(engine, config, where, runs)
    touched = event["event_lineages"] or tuple(w.lineage for w in config.workflows)
    runs = runs[in_scope(runs, "default", config.default_branch) & runs["lineage"].isin(touched)]
    jobs = jobs[in_scope(jobs, "default", config.default_branch) & jobs["lineage"].isin(touched)]
    failures = failure_details(engine, where)
    failures = failures[failures["run_id"].isin(runs["run_id"])]
    sync = last_sync(engine, config.repo)
    paths = [w.path for w in config.workflows if w.lineage in touched]
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
        last_collect=None if sync is None else (sync.finished_at or sync.started_at),
        uncollected=missing,
    )


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


ACTIONS_BOT = "github-actions[bot]"  # who a workflow's GITHUB_TOKEN comments as
INTEGRATION = "not accessible by integration"  # GitHub's 403 to GET /user for such a token
POST_TRIES = 4  # POSTs of one summary; before each retry the comments are listed again


def token_login(client: GitHubClient) -> str:
    """The login the token's comments carry: GET /user's, or ACTIONS_BOT when GitHub answers
    that the token is an integration's (a workflow's GITHUB_TOKEN)."""
    try:
        _, _, user = client.request("GET", "/user")
    except Forbidden as exc:
        if INTEGRATION in str(exc).lower():
            return ACTIONS_BOT
        raise
    return str(user["login"])


def _author(comment: dict[str, Any]) -> str:
    return str((comment.get("user") or {}).get("login") or "")


def marked_comments(
    client: GitHubClient, repo: str, number: int, author: str | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the first comment of the issue by ``author`` whose body starts with MARKER, those
    of anyone else), over every page; ``author`` None: the first of anyone's."""
    mine, foreign = None, []
    path = f"/repos/{repo}/issues/{number}/comments"
    for _, page in client.pages(path, {"per_page": 100}, {}):
        for comment in page.body or []:
            if not (comment.get("body") or "").startswith(MARKER):
                continue
            if author is None or _author(comment).casefold() == author.casefold():
                mine = mine or comment
            else:
                foreign.append(comment)
    return mine, foreign


def find_marked_comment(
    client: GitHubClient, repo: str, number: int, author: str | None = None
) -> dict[str, Any] | None:
    """The first comment of the issue (every page) by ``author`` (None: anyone's) whose body
    starts with MARKER."""
    return marked_comments(client, repo, number, author)[0]


def _github_message(raw: str | None) -> str:
    """An error answer's message and its validation errors, on one line."""
    try:
        answer = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return ""
    if not isinstance(answer, dict):
        return ""
    problems = [str(e.get("message") or e.get("code")) for e in answer.get("errors") or []]
    return ": ".join([str(answer.get("message", "")), *problems])[:300]


def _write_wait(
    client: GitHubClient, status: int, hdrs: dict[str, str], message: str
) -> float | None:
    """Seconds to wait before writing again after a rate-limit answer; None if it is not one."""
    retry_after = hdrs.get("retry-after", "")
    if retry_after.strip().isdigit():
        return float(retry_after)
    if hdrs.get("x-ratelimit-remaining") == "0":
        return max(1.0, int(hdrs.get("x-ratelimit-reset", "0") or 0) - time.time() + 1)
    if status == 429 or SECONDARY_MESSAGE.search(message):
        return client.secondary_wait
    return None


def _post_once(
    client: GitHubClient, path: str, body: str
) -> tuple[dict[str, Any] | None, str, float]:
    """One POST that nothing repeats: GitHubClient's retries would send it again after a 502,
    a cut connection or a garbled answer, when GitHub may well have created the comment.
    (the comment, "", 0) when created, else (None, why, seconds to wait before looking);
    a refusal that is not a rate limit raises."""
    client.check_budget()
    requester = Requester(**{**client.github.requester.kwargs, "retry": 0})
    try:
        status, hdrs, raw = requester.requestJson("POST", path, input={"body": body})
    except requests.exceptions.RequestException as exc:
        return None, type(exc).__name__, 2.0
    finally:
        requester.close()
    hdrs = {key.lower(): value for key, value in hdrs.items()}
    client.stats.count(status, hdrs)
    message = _github_message(raw)
    if status == 201:
        try:
            return json.loads(raw), "", 0.0
        except json.JSONDecodeError:
            return None, "an unreadable answer", 2.0
    if status >= 500:
        return None, f"HTTP {status} {message}", 2.0
    wait = _write_wait(client, status, hdrs, message) if status in (403, 429) else None
    if wait is not None:
        return None, f"rate limit ({status})", wait
    if status == 401:
        raise BadCredentials("GitHub rejected the token (401 Bad credentials)")
    raise CollectError(f"POST {path}: HTTP {status} {message}")


def create_comment(
    client: GitHubClient, repo: str, number: int, body: str, author: str
) -> dict[str, Any]:
    """POST the comment; after a try that may have failed, list the comments again and take
    ours if that try created it after all, so that no retry doubles the comment."""
    path = f"/repos/{repo}/issues/{number}/comments"
    for _ in range(POST_TRIES):
        created, why, wait = _post_once(client, path, body)
        if created is not None:
            return created
        if wait > client.max_wait:
            raise CollectError(f"POST {path}: {why}; GitHub asks to wait {wait:.0f}s")
        message = f"POST {path}: {why}; looking for the comment in {wait:.0f}s"
        client.stats.waits.append(message)
        client.on_wait(message)
        client.sleep(wait)
        mine, _ = marked_comments(client, repo, number, author)
        if mine is not None:
            return mine if mine.get("body") == body else edit_comment(client, repo, mine, body)
    raise CollectError(f"POST {path}: {why} on each of {POST_TRIES} tries; no comment created")


def edit_comment(
    client: GitHubClient, repo: str, comment: dict[str, Any], body: str
) -> dict[str, Any]:
    path = f"/repos/{repo}/issues/comments/{comment['id']}"
    return client.request("PATCH", path, body={"body": body})[2]


def upsert_comment(
    client: GitHubClient, repo: str, number: int, body: str, author: str | None = None
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Edit the marked comment by ``author`` (default: the token's login), or create it:
    ("edited" or "created", the comment, the marked comments of others, left alone)."""
    author = author or token_login(client)
    mine, foreign = marked_comments(client, repo, number, author)
    if mine is not None:
        return "edited", edit_comment(client, repo, mine, body), foreign
    return "created", create_comment(client, repo, number, body, author), foreign


def record_comment(
    engine: Engine, repo: str, number: int, comment: dict[str, Any], body: str
) -> None:
    """Remember the posted comment (its id, address and what it said) in posted_comments."""
    row = {
        "id": comment["id"],
        "repo": repo,
        "issue_number": number,
        "body_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
        "html_url": comment.get("html_url"),
        "created_at": parse_datetime(comment["created_at"]),
        "updated_at": parse_datetime(comment["updated_at"]),
    }
    with Session(engine) as session, session.begin():
        upsert(session, PostedComment, [row])


def post_summary(
    client: GitHubClient, engine: Engine, repo: str, number: int, body: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """Upsert the comment and record it: (what happened, the comment's address, the marked
    comments of others, left alone)."""
    action, comment, foreign = upsert_comment(client, repo, number, body)
    record_comment(engine, repo, number, comment, body)
    return action, str(comment.get("html_url") or ""), foreign


def foreign_line(foreign: list[dict[str, Any]]) -> str:
    """One line naming the comments that carry the marker but are someone else's."""
    who = ", ".join(f"{_author(c) or '?'} {c.get('html_url') or c.get('id')}" for c in foreign)
    return f"left alone: {len(foreign)} comment(s) by someone else starting with the marker: {who}"


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
