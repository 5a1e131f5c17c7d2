"""Job rows upserted per second with the one upsert helper, on SQLite and (when
``CIFLAKE_BENCH_PG_URL`` names a scratch database) PostgreSQL."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, delete
from sqlalchemy.orm import Session

from store.engine import make_engine
from store.migrate import upgrade
from store.models import Job, RunAttempt, Workflow, WorkflowRun
from store.upsert import upsert

RUNS = 2_000
JOBS_PER_RUN = 50  # 100,000 job rows per trial
TRIALS = 3
TARGET = 20_000
COMMAND = "python -m bench.run store"


def _parents(session: Session) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    upsert(
        session,
        Workflow,
        [
            {
                "id": 1,
                "repo": "o/r",
                "path": "w.yml",
                "name": "w",
                "state": "active",
                "created_at": None,
                "updated_at": None,
                "html_url": None,
            }
        ],
    )
    upsert(
        session,
        WorkflowRun,
        [
            {
                "id": r,
                "repo": "o/r",
                "workflow_id": 1,
                "workflow_path": "w.yml",
                "name": "w",
                "display_title": "t",
                "event": "push",
                "head_branch": "main",
                "head_sha": "a" * 40,
                "run_number": r,
                "run_attempt": 1,
                "status": "completed",
                "conclusion": "success",
                "created_at": start + timedelta(minutes=r),
                "updated_at": None,
                "run_started_at": None,
                "html_url": None,
            }
            for r in range(1, RUNS + 1)
        ],
    )
    upsert(
        session,
        RunAttempt,
        [
            {
                "run_id": r,
                "attempt": 1,
                "status": "completed",
                "conclusion": "success",
                "run_started_at": None,
                "updated_at": None,
                "job_count": JOBS_PER_RUN,
            }
            for r in range(1, RUNS + 1)
        ],
    )


def _jobs(trial: int) -> list[dict]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        {
            "id": r * 1000 + j,
            "run_id": r,
            "run_attempt": 1,
            "name": f"e2e_job_{j} (fsdp2, {trial})",
            "status": "completed",
            "conclusion": "success",
            "created_at": at,
            "started_at": at,
            "completed_at": at,
            "runner_name": f"L20x8-{j % 7}",
            "runner_group_name": "vemlp",
            "labels": ["L20x8"],
            "steps": [{"number": 1, "name": "Run", "conclusion": "success"}],
            "html_url": None,
        }
        for r in range(1, RUNS + 1)
        for j in range(JOBS_PER_RUN)
    ]


def _rows_per_second(engine: Engine) -> float:
    upgrade(engine)
    with Session(engine) as session, session.begin():
        session.execute(delete(Job))
        _parents(session)
    rates = []
    for trial in range(TRIALS):  # the first trial inserts, the others update every row
        rows = _jobs(trial)
        started = time.perf_counter()
        with Session(engine) as session, session.begin():
            upsert(session, Job, rows)
        rates.append(len(rows) / (time.perf_counter() - started))
    return statistics.median(rates)


def _row(backend: str, rate: float | None, note: str = "") -> dict:
    return {
        "figure": f"Job rows upserted per second ({backend}, batches, median of {TRIALS})",
        "value": "not measured" if rate is None else f"{rate:,.0f} rows/s",
        "target": f">= {TARGET:,} rows/s" if backend == "SQLite" else "-",
        "met": None if rate is None or backend != "SQLite" else rate >= TARGET,
        "command": COMMAND,
        "note": note,
    }


def measure() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        rows = [_row("SQLite", _rows_per_second(engine))]
        engine.dispose()
    pg_url = os.environ.get("CIFLAKE_BENCH_PG_URL")
    if pg_url:
        engine = make_engine(pg_url)
        rows.append(_row("PostgreSQL", _rows_per_second(engine)))
        engine.dispose()
    else:
        rows.append(_row("PostgreSQL", None, "set CIFLAKE_BENCH_PG_URL to a scratch database"))
    return rows
