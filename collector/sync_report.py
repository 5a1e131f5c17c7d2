"""What a collect is asked to do (``CollectOptions``) and what it reports (``CollectReport``).

The options come from the command line or the scheduler; the report's counts are filled in as
``collector.sync`` goes and ``line()`` renders them as the one line ``ciflake collect`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from store.models import FetchRetry


@dataclass(frozen=True)
class CollectOptions:
    since: datetime | None = None
    full: bool = False
    logs: bool = True
    quiet: bool = False
    max_requests: int | None = None  # counted requests this collect may send (None: no limit)


@dataclass
class CollectReport:
    runs_new: int = 0
    runs_updated: int = 0
    runs_deleted: int = 0
    jobs: int = 0
    annotations_fetched: int = 0
    annotations_refused: str = ""  # the 403 that stopped annotation requests, if one did
    logs_fetched: int = 0
    logs_expired: int = 0
    logs_missing: int = 0
    log_errors: int = 0
    refused: int = 0  # jobs pages and annotations GitHub refused: recorded, asked again later
    # one-minute windows whose listing GitHub still capped: what was listed is kept
    capped_windows: list[str] = field(default_factory=list)
    # what GitHub refused so far and is recorded (store.retries): (kind, state) -> how many
    retries: dict[tuple[str, str], int] = field(default_factory=dict)
    requests: int = 0
    requests_304: int = 0
    rate_limit_remaining: int | None = None
    duration_s: float = 0.0
    missing_workflows: list[str] = field(default_factory=list)
    since_adds_nothing: str = ""  # a --since no backfill starts after: it changes nothing
    stopped: str = ""  # why the collect stopped before the end (its request budget)
    backfill_left: int = 0  # after a stop: windows the backfills have not listed yet
    event_windows_left: int = 0  # ... of which around the configured events

    def line(self) -> str:
        left = "?" if self.rate_limit_remaining is None else str(self.rate_limit_remaining)
        deleted = f" / {self.runs_deleted} deleted on GitHub" if self.runs_deleted else ""
        text = (
            f"runs {self.runs_new} new / {self.runs_updated} updated{deleted}, jobs {self.jobs}, "
            f"annotations of {self.annotations_fetched} jobs, "
            f"logs {self.logs_fetched} fetched / {self.logs_expired} expired / "
            f"{self.logs_missing} missing"
            + (f" / {self.log_errors} failed" if self.log_errors else "")
            + f", API requests {self.requests} ({self.requests_304} not modified), "
            f"rate limit left {left}, {self.duration_s:.1f}s"
        )
        if self.since_adds_nothing:
            text += f"; {self.since_adds_nothing}"
        if self.missing_workflows:
            text += f"; not found on GitHub: {', '.join(self.missing_workflows)}"
        if self.stopped:
            events = (
                f"{self.event_windows_left} of them around the events"
                if self.event_windows_left
                else "the windows around the events are in"
            )
            left = f"; backfill: {self.backfill_left} windows left, {events}"
            text += f"; stopped: {self.stopped}{left if self.backfill_left else ''}"
            text += "; collect again to go on"
        if self.retries:
            text += "; " + describe_retries(self.retries)
        if self.capped_windows:
            text += (
                f"; {len(self.capped_windows)} one-minute windows still capped by GitHub, "
                f"the runs listed kept (created {', '.join(self.capped_windows[:3])})"
            )
        if self.annotations_refused:
            text += (
                "; annotations not readable, failures classified without them (give the token "
                f"`checks: read`, then collect --full): {self.annotations_refused}"
            )
        return text


RETRY_NOUNS = {
    "log": ("log", "logs"),
    "annotations": ("job's annotations", "jobs' annotations"),
    "jobs": ("run's jobs", "runs' jobs"),
}


def describe_retries(counts: dict[tuple[str, str], int]) -> str:
    """ "refused by GitHub: 1 log pending (asked again on a later collect), 1 run's jobs given
    up" from ``store.retries.counts``."""
    parts = []
    for state, note in (("pending", " (asked again on a later collect)"), ("given up", "")):
        items = [
            f"{n} {nouns[n != 1]}"
            for kind, nouns in RETRY_NOUNS.items()
            if (n := counts.get((kind, state), 0))
        ]
        if items:
            parts.append(f"{', '.join(items)} {state}{note}")
    return "refused by GitHub: " + "; ".join(parts)


def describe_refusal(row: FetchRetry) -> str:
    """One recorded refusal as a line: "log of job 123 (run 45): HTTP 500 Failed to generate
    URL to download logs; 2 tries, the last 2026-06-01 03:00 UTC; asked again on a later
    collect"."""
    what = {"log": "log of job", "annotations": "annotations of job", "jobs": "jobs of run"}
    where = f" (run {row.run_id})" if row.kind != "jobs" else ""
    state = "given up" if row.given_up else "asked again on a later collect"
    return (
        f"{what.get(row.kind, row.kind)} {row.item_id}{where}: {row.error}; {row.tries} "
        f"{'try' if row.tries == 1 else 'tries'}, the last {row.last_tried_at:%Y-%m-%d %H:%M} "
        f"UTC; {state}"
    )
