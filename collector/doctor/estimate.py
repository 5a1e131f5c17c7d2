"""The doctor's estimate of a first backfill: requests, budget hours and wall time.

From each tracked workflow's ``total_count`` and newest runs (the shares of failing and
cancelled runs) and the job lists of a few sampled runs, the requests a first backfill makes,
then how long that takes at the measured latency under the rate budget found. Pure arithmetic:
``collector.doctor`` gathers the samples.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from collector.annotations import needs_annotations
from collector.doctor.checks import RESULT_CAP
from collector.payloads import FAILED_CONCLUSIONS
from store.backfill import Progress, Span, subtract

LISTING_WINDOW = timedelta(days=7)  # a backfill's listing windows (collector.sync)


@dataclass(frozen=True)
class WorkflowSample:
    total: int  # total_count of the runs created since the start
    runs: Sequence[dict[str, Any]]  # the newest of them
    share: float = 1.0  # of the time since the start, what earlier collects have not listed


@dataclass(frozen=True)
class Collected:
    """What earlier collects listed of a workflow, as the database keeps it."""

    complete: bool  # its backfill is complete
    listed_to: datetime  # its last listing (a backfill's: the end of its newest window)
    left: list[Span]  # what a collect from now lists again: [since, now] less what was listed

    @classmethod
    def of(
        cls, progress: Progress, since: datetime, listed_at: datetime, now: datetime
    ) -> Collected:
        """From a workflow's backfill ``progress`` and its last listing (``listed_at``); since:
        --since, where a collect would start (else where its backfill started)."""
        listed = progress.listed(listed_at)
        listed_to = max((end for _, end in listed), default=since)
        return cls(progress.complete, listed_to, subtract((since, now), listed))


@dataclass(frozen=True)
class Estimate:
    runs: int
    list_pages: int
    jobs_calls: int
    log_calls: int
    annotation_calls: int
    capped: bool
    basis: str

    @property
    def requests(self) -> int:
        return self.list_pages + self.jobs_calls + self.log_calls + self.annotation_calls


def run_kind(run: dict[str, Any]) -> str:
    """ "cancelled", "failing" (failed jobs to fetch logs and annotations of: failed now, or
    re-run) or "passing"."""
    if run.get("conclusion") == "cancelled":
        return "cancelled"
    if run.get("conclusion") in FAILED_CONCLUSIONS or (run.get("run_attempt") or 1) > 1:
        return "failing"
    return "passing"


def _per_run(sampled: Sequence[Sequence[dict[str, Any]]]) -> tuple[float, float] | None:
    """(log calls, annotation calls) per run, averaged over the job lists of sampled runs."""
    if not sampled:
        return None
    jobs = [job for run_jobs in sampled for job in run_jobs]
    logs = sum(1 for job in jobs if job.get("conclusion") in FAILED_CONCLUSIONS)
    notes = sum(1 for job in jobs if needs_annotations(job))
    return logs / len(sampled), notes / len(sampled)


def _list_pages(total: int, windows: int) -> int:
    """Pages the collector asks for one workflow: a backfill lists one closed window per
    LISTING_WINDOW (at least a page each, 100 runs a page), then the open listing of the
    last days."""
    return max(windows, math.ceil(total / 100)) + 1


def estimate(
    samples: Sequence[WorkflowSample],
    failing_jobs: Sequence[Sequence[dict[str, Any]]],
    cancelled_jobs: Sequence[Sequence[dict[str, Any]]] = (),
    span: timedelta = timedelta(0),
) -> Estimate:
    """Requests of a first backfill: the workflow list, each workflow's list pages, one jobs
    call per run, and per job that failed (or was cancelled after it started) one
    annotations call, plus a log call when it failed. The shares of failing and cancelled
    runs come from each workflow's newest runs, the jobs per such run from the job lists of
    the runs sampled (1 failed job per failing run, none per cancelled one, when none was)."""
    failing_per = _per_run(failing_jobs) or (1.0, 1.0)
    cancelled_per = _per_run(cancelled_jobs) or (0.0, 0.0)
    runs, logs, notes = 0, 0.0, 0.0
    pages = 1  # the workflows list
    windows = int(span // LISTING_WINDOW)
    for sample in samples:
        total = round(sample.total * sample.share)
        runs += total
        pages += _list_pages(total, int(windows * sample.share))
        if not sample.runs:
            continue
        kinds = [run_kind(run) for run in sample.runs]
        for kind, (log_calls, note_calls) in (
            ("failing", failing_per),
            ("cancelled", cancelled_per),
        ):
            share = kinds.count(kind) / len(kinds)
            logs += total * share * log_calls
            notes += total * share * note_calls
    sampled = sum(len(s.runs) for s in samples)
    basis = (
        f"shares from the newest {sampled} runs, jobs per run from {len(failing_jobs)} failing "
        f"and {len(cancelled_jobs)} cancelled runs sampled"
    )
    return Estimate(
        runs=runs,
        list_pages=pages,
        jobs_calls=runs,
        log_calls=round(logs),
        annotation_calls=round(notes),
        capped=any(s.total >= RESULT_CAP for s in samples),
        basis=basis,
    )


def wall_seconds(
    requests_: int, latency: float, limit: int | None, remaining: int | None, reset_in: float
) -> float:
    """Wall time of ``requests_`` sequential calls of ``latency`` seconds under a budget of
    ``limit`` per hour of which ``remaining`` are left for ``reset_in`` more seconds."""
    work = requests_ * latency
    if limit is None or remaining is None or requests_ <= remaining:
        return work
    windows = math.ceil((requests_ - remaining) / limit)  # budgets needed after this one
    last = requests_ - remaining - (windows - 1) * limit
    return max(work, reset_in + (windows - 1) * 3600 + last * latency)


def left_share(left: Sequence[tuple[datetime, datetime]], since: datetime, now: datetime) -> float:
    """The share of [since, now] that ``left`` (the spans a workflow's collects have not
    listed) covers: its runs are estimated pro rata. Only the part of ``left`` within [since,
    now] counts (a backfill that began before ``since`` left days the sample does not count)."""
    seconds = sum(
        max(0.0, (min(end, now) - max(start, since)).total_seconds()) for start, end in left
    )
    return seconds / max(1.0, (now - since).total_seconds())


def estimate_lines(
    found: Estimate,
    what: str,
    latency: float,
    limit: int | None,
    remaining: int | None,
    reset: int | None,
) -> list[str]:
    cap = " at least (a listing reached GitHub's 1,000-result cap)" if found.capped else ""
    lines = [
        f"estimate: {what}: {found.requests:,} requests{cap} "
        f"for {found.runs:,} runs ({found.list_pages:,} list pages, {found.jobs_calls:,} jobs "
        f"calls, {found.log_calls:,} log calls, {found.annotation_calls:,} annotation calls; "
        f"{found.basis})"
    ]
    reset_in = max(0.0, (reset or 0) - time.time())
    wall = wall_seconds(found.requests, latency, limit, remaining, reset_in)
    pace = f"{latency * 1000:.0f} ms per request measured"
    if limit:
        hours = found.requests / limit
        shown = f"{hours:.1f}" if hours >= 1 else f"{hours:.2f}"
        lines.append(
            f"estimate: {shown} h of budget at {limit:,}/h; wall time about "
            f"{_duration(wall)} from now with {remaining or 0:,} left ({pace})"
        )
    else:
        lines.append(f"estimate: wall time about {_duration(wall)} ({pace}; no rate limit)")
    if remaining is not None and found.requests > remaining:
        lines.append(
            "estimate: more than this hour's budget: collect waits for each reset (or stops at "
            "--max-requests) and the next collect goes on where it stopped"
        )
    return lines


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
