"""A dashboard database filled from fakehub's simulated verl history, without the HTTP hop.

Until ``collector.command.collect_once`` can run against an in-process fakehub, the dashboard
tests write fakehub's runs, attempts and jobs through ``store.upsert`` and classify each failed
job's rendered log with the real classifier, so every page sees the shapes a collect stores
(loopback ``html_url``s, compressed logs, context lines, env facts, a sync_log row).
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.classify import classify_job
from fakehub.history import DEFAULT_END, History, Job, Run
from fakehub.logs import render
from store.models import Failure, JobLog, RunAttempt, SyncLog, Workflow, WorkflowRun
from store.models import Job as JobRow
from store.upsert import upsert

REPO = "verl-project/verl"
HTML = f"http://127.0.0.1:9/{REPO}"
RED = ("failure", "timed_out")


def _run_row(run: Run) -> dict[str, Any]:
    latest = run.latest
    return {
        "id": run.id,
        "repo": REPO,
        "workflow_id": run.workflow.id,
        "workflow_path": run.workflow.path,
        "name": run.workflow.name,
        "display_title": run.title,
        "event": run.event,
        "head_branch": run.branch,
        "head_sha": run.sha,
        "run_number": run.number,
        "run_attempt": latest.number,
        "status": latest.status,
        "conclusion": latest.conclusion,
        "created_at": run.created_at,
        "updated_at": latest.updated_at,
        "run_started_at": latest.created_at,
        "html_url": f"{HTML}/actions/runs/{run.id}",
    }


def _job_row(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_attempt": job.attempt,
        "name": job.spec.name,
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "completed_at": job.completed_at,
        "runner_name": job.runner_name,
        "runner_group_name": job.runner_label,
        "labels": [job.runner_label],
        "steps": [],
        "html_url": f"{HTML}/actions/runs/{job.run_id}/job/{job.id}",
    }


def _failure_row(run_id: int, attempt: int, job_id: int, log: bytes | None) -> dict[str, Any]:
    result = classify_job(log=log) if log is not None else classify_job(no_jobs=True)
    return {
        "run_id": run_id,
        "run_attempt": attempt,
        "job_id": job_id,
        "category": result.category,
        "rule": result.rule,
        "signature": result.signature,
        "line_number": result.line_number,
        "line": result.line,
        "context": result.context,
        "env": result.env,
        "classifier_version": result.rules_version,
        "classified_at": datetime.now(UTC),
    }


def fill_from_history(engine: Engine, *, seed: int = 7, scale: float = 0.15) -> None:
    """Store fakehub's history (seed, scale) as a collect would, and one successful sync."""
    history = History(seed=seed, scale=scale, end=DEFAULT_END)
    workflows = {run.workflow.id: run.workflow for run in history.runs}
    runs, attempts, jobs, logs, failures = [], [], [], [], []
    for run in history.runs:
        runs.append(_run_row(run))
        for attempt in run.attempts:
            attempts.append(
                {
                    "run_id": run.id,
                    "attempt": attempt.number,
                    "status": attempt.status,
                    "conclusion": attempt.conclusion,
                    "run_started_at": attempt.created_at,
                    "updated_at": attempt.updated_at,
                    "job_count": len(attempt.jobs),
                }
            )
            if not attempt.jobs and attempt.conclusion in RED:
                failures.append(_failure_row(run.id, attempt.number, 0, None))
            for job in attempt.jobs:
                jobs.append(_job_row(job))
                if job.conclusion in RED and job.ran:
                    text = render(job, run, REPO).text.encode()
                    logs.append(_log_row(job.id, text))
                    failures.append(_failure_row(run.id, attempt.number, job.id, text))
    with Session(engine) as session, session.begin():
        upsert(session, Workflow, [_workflow_row(w) for w in workflows.values()])
        upsert(session, WorkflowRun, runs)
        upsert(session, RunAttempt, attempts)
        upsert(session, JobRow, jobs)
        upsert(session, JobLog, logs)
        upsert(session, Failure, failures)
        session.add(_sync_row())


def _workflow_row(workflow: Any) -> dict[str, Any]:
    return {
        "id": workflow.id,
        "repo": REPO,
        "path": workflow.path,
        "name": workflow.name,
        "state": "active",
        "created_at": None,
        "updated_at": None,
        "html_url": f"{HTML}/blob/main/{workflow.path}",
    }


def _log_row(job_id: int, text: bytes) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "status": "ok",
        "content": zlib.compress(text, 6),
        "compression": "zlib",
        "size": len(text),
        "sha256": None,
        "error": None,
        "fetched_at": datetime.now(UTC),
    }


def _sync_row() -> SyncLog:
    now = datetime.now(UTC)
    return SyncLog(repo=REPO, started_at=now, finished_at=now, status="ok", duration_s=0.0)
