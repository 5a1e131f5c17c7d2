"""The demo's simulated history gives triage something to do: failure signatures that recur for
weeks, one that stops (quiet for longer than the 14 days after which an issue is closed), and
one that comes back after such a quiet spell (its issue is reopened). Read from the shared demo
database, as a collect stored it: default-branch failures that have a deciding line.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from itertools import pairwise

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.engine import make_engine
from store.models import Failure, WorkflowRun

QUIET = timedelta(days=14)  # triage's default closing period
WEEK = timedelta(days=7)


def crossed(failures: list[tuple[datetime, int]]) -> datetime | None:
    """When a signature first met triage's default threshold: 3 failures in 2 runs within 7
    days; None if it never did."""
    for start, _ in failures:
        window = [(at, run) for at, run in failures if start <= at < start + WEEK]
        if len(window) >= 3 and len({run for _, run in window}) >= 2:
            return window[-1][0]
    return None


def test_signatures_recur_stop_and_come_back(demo_db: str) -> None:
    engine = make_engine(demo_db)
    try:
        with Session(engine) as session:
            rows = session.execute(
                select(WorkflowRun.repo, Failure.signature, WorkflowRun.created_at, Failure.run_id)
                .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
                .where(Failure.line.is_not(None), WorkflowRun.head_branch == "main")
            ).all()
            end = session.scalar(
                select(WorkflowRun.created_at).order_by(WorkflowRun.created_at.desc())
            )
    finally:
        engine.dispose()
    by_signature: dict[tuple[str, str], list[tuple[datetime, int]]] = defaultdict(list)
    for repo, signature, at, run in rows:
        by_signature[(repo, signature)].append((at, run))
    recurring, stopped, returned = [], [], []
    for key, failures in by_signature.items():
        failures.sort()
        filed = crossed(failures)
        if filed is None:
            continue
        first, last = failures[0][0], failures[-1][0]
        if last - first >= 4 * WEEK:
            recurring.append(key)
        if end - last > QUIET:
            stopped.append(key)
        after = [at for at, _ in failures if at >= filed]
        if any(b - a > QUIET for a, b in pairwise(after)) and end - last <= QUIET:
            returned.append(key)
    assert len(recurring) >= 5, recurring
    assert stopped, "no signature stops"
    assert returned, "no signature comes back after a quiet spell"
    assert set(stopped) & set(recurring) and set(returned) & set(recurring)
