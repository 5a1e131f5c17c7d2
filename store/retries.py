"""Resources GitHub kept refusing (``FetchRetry``): a job's log or annotations, a run's jobs.

A collect records each one and goes on. Later collects ask again once the wait after the last
try has passed (``WAITS``), and give up after ``MAX_TRIES``: a log GitHub cannot serve for days
("Failed to generate URL to download logs") costs a few requests a night, not every night's
collect. An answer, whatever it is, deletes the row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from store.models import FetchRetry
from store.runfilter import Bind

KINDS: tuple[str, ...] = ("log", "annotations", "jobs")
MAX_TRIES = 6
# A 404 for the log of a job that ran: whether GitHub answers one briefly after a job completes
# is undocumented, so it is asked once more, a collect later, before the log counts as missing.
NOT_FOUND_TRIES = 2
# The wait before the 2nd, 3rd, ... try. The refused answer already outlived the client's own
# retries, so none comes in the same collect; nightly collects then ask on nights 2, 3 and 4,
# then every third night: six tries span about ten nights, well within a log's 90 days.
WAITS: tuple[timedelta, ...] = (
    timedelta(hours=1),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(days=3),
    timedelta(days=3),
)


@dataclass(frozen=True)
class Refusal:
    """One refused resource: what it is, where it belongs, and GitHub's answer."""

    kind: str
    item_id: int  # the job (log, annotations) or the run (jobs)
    workflow_id: int
    run_id: int
    status: int | None
    error: str
    max_tries: int = MAX_TRIES  # given up at this many tries


def wait_after(tries: int) -> timedelta:
    """How long after its ``tries``-th refused try a resource is asked again."""
    return WAITS[min(max(tries, 1), len(WAITS)) - 1]


def is_due(row: FetchRetry, now: datetime) -> bool:
    return not row.given_up and row.last_tried_at + wait_after(row.tries) <= now


def record(session: Session, repo: str, refusals: Iterable[Refusal], now: datetime) -> set[int]:
    """Count one more try of each refused resource; returns the item ids given up now."""
    given_up = set()
    for refusal in refusals:
        row = session.get(FetchRetry, (refusal.kind, refusal.item_id))
        if row is None:
            row = FetchRetry(
                kind=refusal.kind,
                item_id=refusal.item_id,
                repo=repo,
                tries=0,
                first_failed_at=now,
                given_up=False,
            )
            session.add(row)
        row.workflow_id, row.run_id = refusal.workflow_id, refusal.run_id
        row.status, row.error = refusal.status, refusal.error[:500]
        row.tries += 1
        row.last_tried_at = now
        row.given_up = row.tries >= refusal.max_tries
        if row.given_up:
            given_up.add(refusal.item_id)
    session.flush()
    return given_up


def clear(session: Session, kind: str, item_ids: Sequence[int]) -> None:
    """GitHub answered: these resources need no more tries."""
    for start in range(0, len(item_ids), 500):
        chunk = item_ids[start : start + 500]
        session.execute(
            delete(FetchRetry).where(FetchRetry.kind == kind, FetchRetry.item_id.in_(chunk))
        )


def forgive(session: Session, kind: str, item_ids: Sequence[int]) -> None:
    """An outage refused these, not their resources: each row's last try is not counted and
    the resource is due at once. The row stays: for annotations it is what asks them again."""
    for start in range(0, len(item_ids), 500):
        chunk = item_ids[start : start + 500]
        rows = session.scalars(
            select(FetchRetry).where(FetchRetry.kind == kind, FetchRetry.item_id.in_(chunk))
        )
        for row in rows:
            row.tries = max(row.tries - 1, 0)
            row.given_up = False
            row.last_tried_at -= wait_after(row.tries)


def waiting(session: Session, kind: str, item_ids: Sequence[int], now: datetime) -> set[int]:
    """Which of ``item_ids`` must not be asked now: given up, or still in their wait."""
    found: set[int] = set()
    for start in range(0, len(item_ids), 500):
        chunk = item_ids[start : start + 500]
        rows = session.scalars(
            select(FetchRetry).where(FetchRetry.kind == kind, FetchRetry.item_id.in_(chunk))
        )
        found.update(row.item_id for row in rows if not is_due(row, now))
    return found


def due(session: Session, repo: str, kind: str, now: datetime) -> list[FetchRetry]:
    """The resources of ``kind`` to ask again now, oldest refusal first."""
    rows = session.scalars(
        select(FetchRetry)
        .where(FetchRetry.repo == repo, FetchRetry.kind == kind, FetchRetry.given_up.is_(False))
        .order_by(FetchRetry.first_failed_at, FetchRetry.item_id)
    )
    return [row for row in rows if is_due(row, now)]


def exist(session: Session, repo: str) -> bool:
    """Whether ``repo`` has any recorded refusal: while it has none, a collect asks nothing of
    this table."""
    stmt = select(FetchRetry.item_id).where(FetchRetry.repo == repo).limit(1)
    return session.scalar(stmt) is not None


def listed(bind: Bind, repo: str | None = None) -> list[FetchRetry]:
    """Every recorded resource (of ``repo``), pending ones first, for reports and doctor."""
    stmt = select(FetchRetry).order_by(FetchRetry.given_up, FetchRetry.kind, FetchRetry.item_id)
    if repo is not None:
        stmt = stmt.where(FetchRetry.repo == repo)
    with Session(bind) as session:
        return list(session.scalars(stmt))


def counts(rows: Iterable[FetchRetry]) -> Counter[tuple[str, str]]:
    """(kind, "pending" | "given up") -> how many."""
    return Counter((row.kind, "given up" if row.given_up else "pending") for row in rows)
