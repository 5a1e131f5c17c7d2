"""Jobs of every attempt of a run (``filter=all``), with steps, runner and labels, and the
attempts they imply."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from collector.client import GitHubClient
from collector.payloads import FAILED_CONCLUSIONS, attempt_conclusion, job_row, parse_time
from store.models import Job, RunAttempt
from store.upsert import upsert


def fetch_jobs(client: GitHubClient, repo: str, run_id: int) -> list[dict[str, Any]]:
    """Every job of every attempt of a run: one request per 100 jobs."""
    jobs: dict[int, dict[str, Any]] = {}  # by id: a page asked again smaller may repeat some
    path = f"/repos/{repo}/actions/runs/{run_id}/jobs"
    for _url, page in client.pages(path, {"filter": "all", "per_page": 100}, {}):
        jobs.update((job["id"], job) for job in page.body.get("jobs", []))
    return list(jobs.values())


def attempt_rows(
    run: dict[str, Any], jobs: Sequence[dict[str, Any]], timed_out: set[int]
) -> list[dict[str, Any]]:
    """One row per attempt. The latest attempt is the run as GitHub reports it; the others are
    summed up from their jobs, which spares a request per attempt. ``timed_out``: ids of jobs
    that hit their time limit; an attempt GitHub calls ``cancelled`` with such a job timed out
    (collector.annotations)."""
    by_attempt: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        by_attempt[job.get("run_attempt") or 1].append(job)
    latest = run.get("run_attempt") or 1
    rows = []
    for attempt in range(1, latest + 1):
        attempt_jobs = by_attempt.get(attempt, [])
        if attempt == latest:
            status, conclusion = run.get("status"), run.get("conclusion")
            started, updated = run.get("run_started_at"), run.get("updated_at")
        else:
            status = "completed"
            conclusion = attempt_conclusion(attempt_jobs) if attempt_jobs else None
            started = min((j.get("started_at") or "" for j in attempt_jobs), default="") or None
            updated = max((j.get("completed_at") or "" for j in attempt_jobs), default="") or None
        rows.append(
            {
                "run_id": run["id"],
                "attempt": attempt,
                "status": status,
                "conclusion": conclusion,
                "run_started_at": parse_time(started),
                "updated_at": parse_time(updated),
                "job_count": len(attempt_jobs),
                "timed_out": conclusion == "cancelled"
                and any(j["id"] in timed_out for j in attempt_jobs),
            }
        )
    return rows


def failed_jobs(jobs: Sequence[dict[str, Any]], timed_out: set[int]) -> list[dict]:
    """Jobs that failed: failure or timed_out, and cancelled jobs that hit their time limit."""
    return [
        job for job in jobs if job.get("conclusion") in FAILED_CONCLUSIONS or job["id"] in timed_out
    ]


def save_jobs(
    session: Session,
    attempts: Sequence[dict[str, Any]],
    jobs: Sequence[dict[str, Any]],
    timed_out: set[int],
) -> int:
    upsert(session, RunAttempt, list(attempts))
    upsert(session, Job, [job_row(job) | {"timed_out": job["id"] in timed_out} for job in jobs])
    return len(jobs)
