"""GitHub JSON payloads to store rows: the one place that knows both shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def workflow_row(repo: str, wf: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": wf["id"],
        "repo": repo,
        "path": wf.get("path") or "",
        "name": wf.get("name") or "",
        "state": wf.get("state") or "unknown",
        "created_at": parse_time(wf.get("created_at")),
        "updated_at": parse_time(wf.get("updated_at")),
        "html_url": wf.get("html_url"),
    }


def run_row(repo: str, workflow_path: str, run: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run["id"],
        "repo": repo,
        "workflow_id": run["workflow_id"],
        "workflow_path": workflow_path,
        "name": run.get("name"),
        "display_title": run.get("display_title"),
        "event": run.get("event") or "unknown",
        "head_branch": run.get("head_branch"),
        "head_sha": run.get("head_sha") or "",
        "run_number": run.get("run_number") or 0,
        "run_attempt": run.get("run_attempt") or 1,
        "status": run.get("status"),
        "conclusion": run.get("conclusion"),
        "created_at": parse_time(run.get("created_at")),
        "updated_at": parse_time(run.get("updated_at")),
        "run_started_at": parse_time(run.get("run_started_at")),
        "html_url": run.get("html_url"),
    }


def run_fingerprint(run: dict[str, Any]) -> tuple[Any, ...]:
    """What changes when a run progresses or is re-run: a stored run with the same fingerprint
    needs no new request."""
    return (
        run.get("run_attempt") or 1,
        run.get("status"),
        run.get("conclusion"),
        parse_time(run.get("updated_at")),
    )


def job_row(job: dict[str, Any]) -> dict[str, Any]:
    steps = [
        {
            "number": step.get("number"),
            "name": step.get("name"),
            "status": step.get("status"),
            "conclusion": step.get("conclusion"),
            "started_at": step.get("started_at"),
            "completed_at": step.get("completed_at"),
        }
        for step in job.get("steps") or []
    ]
    return {
        "id": job["id"],
        "run_id": job["run_id"],
        "run_attempt": job.get("run_attempt") or 1,
        "name": job.get("name") or "",
        "status": job.get("status"),
        "conclusion": job.get("conclusion"),
        "created_at": parse_time(job.get("created_at")),
        "started_at": parse_time(job.get("started_at")),
        "completed_at": parse_time(job.get("completed_at")),
        "runner_name": job.get("runner_name"),
        "runner_group_name": job.get("runner_group_name"),
        "labels": list(job.get("labels") or []),
        "steps": steps,
        "html_url": job.get("html_url"),
    }


FAILED_CONCLUSIONS = frozenset({"failure", "timed_out"})


def attempt_conclusion(jobs: list[dict[str, Any]]) -> str | None:
    """An earlier attempt's conclusion from its jobs, which saves one request per attempt:
    failure if any job failed, cancelled if any was cancelled, else success."""
    conclusions = {j.get("conclusion") for j in jobs}
    if conclusions & FAILED_CONCLUSIONS:
        return "failure"
    if "cancelled" in conclusions:
        return "cancelled"
    if None in conclusions:
        return None
    return "success"


def ran(job: dict[str, Any]) -> bool:
    """A runner took the job (it has a runner or a step that did something): only such a job
    has a log, and only such a cancelled job may have hit a time limit."""
    return bool(job.get("runner_name")) or any(
        step.get("conclusion") not in (None, "skipped") for step in job.get("steps") or []
    )


def failed_steps(job: dict[str, Any]) -> list[str]:
    return [
        s.get("name") or ""
        for s in job.get("steps") or []
        if s.get("conclusion") in FAILED_CONCLUSIONS
    ]


def stopped_steps(job: dict[str, Any]) -> list[str]:
    """The steps where the job stopped: failed ones, or the one a time limit cancelled."""
    return failed_steps(job) or [
        s.get("name") or "" for s in job.get("steps") or [] if s.get("conclusion") == "cancelled"
    ]
