"""Concurrency on SQLite: the collector writes (new runs, then a full re-collect, over and over)
while the dashboard's queries run in a loop on a read-only engine. No "database is locked", and
no stale read: each read sees at least every run committed before it started, and the count
never goes down."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

from store import frame_queries, page_queries
from store.engine import make_engine
from store.models import WorkflowRun
from tests.reliability.harness import SIZE, canary_hub, fast_collect, record
from tests.support.hubtools import migrated

SUITE = "concurrency"
LOADERS = (
    frame_queries.load_jobs,
    frame_queries.load_failures,
    page_queries.daily_run_counts,
    page_queries.signature_summary,
)


class Committed:
    """The run count after the writer's latest commit, kept by a session event."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.runs = 0
        self.commits = 0

    def __call__(self, session: Session) -> None:
        if session.get_bind().url != self.engine.url:  # not the collector's database
            return
        with self.engine.connect() as conn:
            self.runs = conn.scalar(select(func.count()).select_from(WorkflowRun)) or 0
        self.commits += 1


def _read_loop(url: str, committed: Committed, stop: threading.Event, errors: list[str]) -> int:
    reader = make_engine(url, read_only=True)
    reads, last = 0, 0
    while not stop.is_set():
        floor = committed.runs
        try:
            seen = len(frame_queries.load_runs(reader))
            for loader in LOADERS:
                loader(reader)
        except Exception as exc:  # every failure is a finding: "database is locked" above all
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            break
        if seen < floor or seen < last:
            errors.append(f"stale read: {seen} runs, {floor} committed before, {last} seen before")
        last, reads = seen, reads + 1
    reader.dispose()
    return reads


@pytest.mark.slow
def test_dashboard_queries_while_the_collector_writes(tmp_path):
    url = f"sqlite:///{tmp_path / 'ciflake.db'}"
    writer = migrated(url)
    committed = Committed(writer)
    event.listen(Session, "after_commit", committed)
    errors: list[str] = []
    stop = threading.Event()
    reads: list[int] = []
    try:
        with canary_hub() as hub:
            workflow = hub.admin("GET", "truth")["workflows"][0]["path"]
            thread = threading.Thread(
                target=lambda: reads.append(_read_loop(url, committed, stop, errors))
            )
            thread.start()
            deadline = time.monotonic() + SIZE.concurrency_s
            collects = 0
            while time.monotonic() < deadline and not errors:
                hub.admin("POST", "new_runs", {"workflow": workflow, "count": 30})
                fast_collect(hub, url, full=collects > 0)
                collects += 1
            stop.set()
            thread.join(timeout=120)
    finally:
        event.remove(Session, "after_commit", committed)
    record(SUITE, trials=collects, reads=sum(reads), commits=committed.commits, crashes=len(errors))
    assert not errors, errors[:5]
    assert sum(reads) > 0 and committed.commits > collects
