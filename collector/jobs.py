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
    jobs: list[dict[str, Any]] = []
    path = f"/repos/{repo}/actions/runs/{run_id}/jobs"
    for _url, page in client.pages(path, {"filter": "all", "per_page": 100}, {}):
        jobs.extend(page.body.get("jobs", []))
    return jobs


def fetch_attempt(client: GitHubClient, repo: str, run_id: int, attempt: int) -> dict[str, Any]:
    _status, _headers, body = client.get(f"/repos/{repo}/actions/runs/{run_id}/attempts/{attempt}")
    return body


def ambiguous_attempts(run: dict[str, Any], jobs: Sequence[dict[str, Any]]) -> list[int]:
    """Earlier attempts whose conclusion the jobs cannot tell: a cancelled job and no failed
    one is a concurrency cancel (run cancelled) or a job time limit (run failed)."""
    latest = run.get("run_attempt") or 1
    by_attempt: dict[int, set[Any]] = defaultdict(set)
    for job in jobs:
        by_attempt[job.get("run_attempt") or 1].add(job.get("conclusion"))
    return [
        attempt
        for attempt, conclusions in sorted(by_attempt.items())
        if attempt < latest and "cancelled" in conclusions and not conclusions & FAILED_CONCLUSIONS
    ]


def attempt_rows(
    run: dict[str, Any],
    jobs: Sequence[dict[str, Any]],
    fetched: dict[int, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per attempt. The latest attempt is the run as GitHub reports it, ``fetched``
    attempts as GitHub reported them; the others are summed up from their jobs, which spares a
    request per attempt."""
    fetched = fetched or {}
    by_attempt: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        by_attempt[job.get("run_attempt") or 1].append(job)
    latest = run.get("run_attempt") or 1
    rows = []
    for attempt in range(1, latest + 1):
        attempt_jobs = by_attempt.get(attempt, [])
        reported = run if attempt == latest else fetched.get(attempt)
        if reported is not None:
            status, conclusion = reported.get("status"), reported.get("conclusion")
            started, updated = reported.get("run_started_at"), reported.get("updated_at")
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
            }
        )
    return rows


def failed_jobs(jobs: Sequence[dict[str, Any]], attempts: Sequence[dict[str, Any]]) -> list[dict]:
    """Jobs that failed: failure or timed_out, and cancelled jobs of a failed attempt (a job
    that hit its time limit is cancelled, while its run fails)."""
    failed_attempts = {
        (a["run_id"], a["attempt"]) for a in attempts if a["conclusion"] == "failure"
    }
    return [
        job
        for job in jobs
        if job.get("conclusion") in FAILED_CONCLUSIONS
        or (
            job.get("conclusion") == "cancelled"
            and (job["run_id"], job.get("run_attempt") or 1) in failed_attempts
        )
    ]


def save_jobs(
    session: Session, attempts: Sequence[dict[str, Any]], jobs: Sequence[dict[str, Any]]
) -> int:
    upsert(session, RunAttempt, list(attempts))
    upsert(session, Job, [job_row(job) for job in jobs])
    return len(jobs)
