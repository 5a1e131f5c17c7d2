"""Time limits read from the workflow file, for the jobs whose annotations cannot say.

GitHub ends a job that reaches its `timeout-minutes` as `cancelled`, and a step that reaches its
own as failed; the runner's annotation ("...has exceeded the maximum execution time of N
minutes") says so, but a token without `checks: read` reads no annotations, and GitHub keeps at
most 10 error annotations per step and 50 per job (docs/github-behaviour.md). The file says it
too: each job's `timeout-minutes` (default 360) and each step's. It is read at the run's
`head_sha` with the contents API (`GET /repos/{owner}/{repo}/contents/{path}?ref={sha}`), once
per file and commit (``store.models.WorkflowFile``), and only for runs with such a job.

A job (or failed step) whose duration reaches its limit hit it: ``reached`` says how ("ran 10
of its 10 minutes"), and that fact classifies it `timeout` with evidence `job`. A limit set by
an expression (`${{ ... }}`) is unknown, and so is a job the file does not name.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import yaml
from sqlalchemy.orm import Session

from collector.annotations import DEFAULT_LIMIT_MINUTES
from collector.client import GitHubClient, NotFound
from collector.payloads import parse_time, ran
from store.models import WorkflowFile
from store.upsert import upsert

TOLERANCE_SECONDS = 1  # timestamps are whole seconds
MATRIX_SUFFIX = re.compile(r" \(.*\)$")  # "test (3.11, ubuntu)": the matrix values GitHub adds
STEP_LIMITED = ("failure", "cancelled", "timed_out")

Limits = dict[str, Any]  # {"jobs": {job name: {"limit": minutes | None, "steps": {name: min}}}}


def parse(text: str) -> Limits:
    """The time limits of a workflow file: per job (by its `name`, else its key), its own
    `timeout-minutes` (None: GitHub's default; "expr": set by an expression) and its named
    steps' (those set by an expression left out)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {"jobs": {}}
    jobs: dict[str, Any] = {}
    for key, job in ((data or {}).get("jobs") or {}).items() if isinstance(data, dict) else ():
        if not isinstance(job, dict):
            continue
        steps = {
            str(step["name"]): step["timeout-minutes"]
            for step in job.get("steps") or []
            if isinstance(step, dict)
            and step.get("name")
            and isinstance(step.get("timeout-minutes"), int | float)
        }
        limit = job.get("timeout-minutes")
        jobs[str(job.get("name") or key)] = {
            "limit": limit if limit is None or isinstance(limit, int | float) else "expr",
            "steps": steps,
        }
    return {"jobs": jobs}


def file_limits(
    session: Session, client: GitHubClient, repo: str, path: str, sha: str
) -> Limits | None:
    """The limits of ``path`` at commit ``sha``: from the database, else asked for once and
    kept. None when GitHub has no such file there (a fork's commit, a deleted branch)."""
    stored = session.get(WorkflowFile, (repo, path, sha))
    if stored is not None:
        return stored.limits
    try:
        _status, _headers, body = client.get(f"/repos/{repo}/contents/{path}", {"ref": sha})
        text = base64.b64decode(body.get("content") or "").decode("utf-8", "replace")
        limits: Limits | None = parse(text)
    except NotFound:
        limits = None
    row = {"repo": repo, "path": path, "sha": sha, "limits": limits, "fetched_at": _now()}
    upsert(session, WorkflowFile, [row])
    return limits


def _now() -> datetime:
    return datetime.now(UTC)


def _minutes(seconds: float) -> int:
    return int((seconds + TOLERANCE_SECONDS) // 60)


def _span(item: Mapping[str, Any]) -> float | None:
    started, completed = parse_time(item.get("started_at")), parse_time(item.get("completed_at"))
    if started is None or completed is None:
        return None
    return (completed - started).total_seconds()


def _job_entry(limits: Limits, name: str | None) -> dict[str, Any] | None:
    jobs = limits.get("jobs") or {}
    if not name:
        return None
    return jobs.get(name) or jobs.get(MATRIX_SUFFIX.sub("", name))


def reached(job: Mapping[str, Any], limits: Limits) -> str | None:
    """How ``job`` ran its whole time limit by the file's ``limits``, or None: a cancelled job
    that ran its `timeout-minutes` ("ran 10 of its 10 minutes"), or a step that failed or was
    cancelled after its own ("step "Run tests" ran 7 of its 7 minutes")."""
    entry = _job_entry(limits, job.get("name"))
    if entry is None or not ran(job):
        return None
    for step in job.get("steps") or []:
        limit = entry["steps"].get(step.get("name"))
        seconds = _span(step) if step.get("conclusion") in STEP_LIMITED and limit else None
        if seconds is not None and seconds + TOLERANCE_SECONDS >= limit * 60:
            return f'step "{step["name"]}" ran {_minutes(seconds)} of its {limit:g} minutes'
    limit = entry["limit"] if entry["limit"] is not None else DEFAULT_LIMIT_MINUTES
    seconds = _span(job)
    if job.get("conclusion") != "cancelled" or limit == "expr" or seconds is None:
        return None
    if seconds + TOLERANCE_SECONDS >= limit * 60:
        return f"ran {_minutes(seconds)} of its {limit:g} minutes"
    return None
