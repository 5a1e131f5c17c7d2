"""What a collect is asked to do (``CollectOptions``) and what it reports (``CollectReport``).

The options come from the command line or the scheduler; the report's counts are filled in as
``collector.sync`` goes and ``line()`` renders them as the one line ``ciflake collect`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


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
    requests: int = 0
    requests_304: int = 0
    rate_limit_remaining: int | None = None
    duration_s: float = 0.0
    missing_workflows: list[str] = field(default_factory=list)
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
        if self.annotations_refused:
            text += (
                "; annotations not readable, failures classified without them (give the token "
                f"`checks: read`, then collect --full): {self.annotations_refused}"
            )
        return text
