"""What the reliability suites share: their size, a fast client, a canary token, the tally.

Each test calls ``record(suite, ...)`` with what it tried (trials, faults fired, bad inputs) and
what went wrong (mismatches, crashes, leaks); with ``CIFLAKE_RELIABILITY_TALLY`` set, the counts
are appended to that file as JSON lines for the ``make reliability`` table.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from click.testing import Result
from sqlalchemy import Engine

import fakehub
from collector.client import GitHubClient
from collector.progress import CollectProgress
from collector.sync import collect
from collector.sync_report import CollectOptions, CollectReport
from store.settings import Config
from tests.support.hubtools import SINCE, hub_config, migrated, snapshot

FULL = os.environ.get("CIFLAKE_RELIABILITY") == "full"
TALLY_ENV = "CIFLAKE_RELIABILITY_TALLY"
CANARY = "ghp_CANARY0rel1ab1l1ty0t0ken0never0printed"


@dataclass(frozen=True)
class Size:
    """How much each suite does: `make test` runs the small size, `make reliability` the full."""

    hub_scale: float
    fault_seeds: tuple[int, ...]
    kills: int
    concurrency_s: float


SIZE = Size(0.03, (3, 5), 20, 60.0) if FULL else Size(0.01, (3,), 4, 6.0)


def record(suite: str, **counts: int | dict[str, int]) -> None:
    """Add counts (trials, faults, mismatches, bad_inputs, crashes, leaks) to the tally."""
    path = os.environ.get(TALLY_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"suite": suite, **counts}) + "\n")


CLOCK = 0.1


def compressed_sleep(seconds: float) -> None:
    """A tenth of every wait the client asks for: GitHub's Retry-After and backoffs are not
    enforced by fakehub, and a primary reset it does enforce is asked again until it passed.
    That the client asks for the right waits is tests/test_client_waits.py's check."""
    time.sleep(seconds * CLOCK)


def fast_client(
    config: Config, progress: CollectProgress | None = None, max_requests: int | None = None
) -> GitHubClient:
    """Production behaviour on a compressed clock, so that a test with many faults stays
    short."""
    note = progress.note if progress is not None else None
    return GitHubClient(
        config.api_url,
        config.token,
        secondary_wait=0.5,
        backoff_factor=0.05,
        on_wait=note,
        sleep=compressed_sleep,
        max_requests=max_requests,
        reserve=config.collect_reserve,
    )


def fast_collect(hub: fakehub.Hub, db_url: str, full: bool = False) -> CollectReport:
    engine = migrated(db_url)
    config = hub_config(hub, db_url)
    options = CollectOptions(since=SINCE, quiet=True, full=full)
    try:
        return collect(config, config.project(), engine, fast_client(config), options)
    finally:
        engine.dispose()


@contextmanager
def canary_hub(seed: int = 11, scale: float | None = None) -> Iterator[fakehub.Hub]:
    """A fakehub that accepts only the canary token and never runs out of rate limit."""
    with fakehub.running(seed=seed, scale=scale or SIZE.hub_scale, token=CANARY) as hub:
        hub.admin("POST", "rate_limit", {"limit": 10**9})
        yield hub


def a_night_later(db_url: str) -> None:
    """Every refusal recorded in the database tried four days earlier: the wait before its
    next try has passed, as it has by a later night (store.retries)."""
    from datetime import timedelta

    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from store.models import FetchRetry

    engine = migrated(db_url)
    try:
        with Session(engine) as session, session.begin():
            for row in session.scalars(select(FetchRetry)):
                row.last_tried_at -= timedelta(days=4)
    finally:
        engine.dispose()


def frozen(engine: Engine) -> dict[str, list[tuple]]:
    """``snapshot`` for comparisons; the engine is released so the file can be reused."""
    try:
        return snapshot(engine)
    finally:
        engine.dispose()


def mismatched_tables(expected: dict[str, list[tuple]], got: dict[str, list[tuple]]) -> list[str]:
    return [table for table, rows in expected.items() if got.get(table) != rows]


def one_line_failure(result: Result) -> str | None:
    """Why a failed CLI result is not one clear line (exit 2, no traceback, no token), or None."""
    text = result.output
    if result.exit_code != 2:
        return f"exit status {result.exit_code}: {result.exception!r}"
    if "Traceback" in text or len(text.strip().splitlines()) != 1:
        return f"not one line: {text!r}"
    if not text.startswith("ciflake: error: "):
        return f"not an error line: {text!r}"
    return None


def leaks(*texts: str | bytes) -> int:
    """How many of ``texts`` contain the canary token."""
    return sum(CANARY.encode() in (t if isinstance(t, bytes) else t.encode()) for t in texts)
