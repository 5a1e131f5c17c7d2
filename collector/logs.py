"""Logs of failed jobs: where the API says they are (sequential, it is the API), downloaded
without the token in a small pool, archived compressed, and classified as they arrive."""

from __future__ import annotations

import hashlib
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from sqlalchemy.orm import Session

from collector.classify import Classification, classify_job
from collector.classify.stages import stage_of
from collector.client import BlobExpired, BlobGone, CollectError, GitHubClient
from collector.payloads import failed_steps, ran, stopped_steps
from store.models import Failure, Job, JobLog
from store.upsert import upsert

COMPRESSION = "zlib"
URL_LIFETIME = 50.0  # seconds a log URL is trusted: GitHub's expire after 60
URL_ROUNDS = 3  # times a job's log URL is asked for before its download counts as failed


@dataclass
class LogResult:
    job: dict[str, Any]
    status: str  # ok | expired | missing | error (| stale: the URL expired, ask again)
    content: bytes | None = None
    error: str | None = None

    @cached_property
    def classification(self) -> Classification:
        return classify(self.job, self.content)


def compress(content: bytes) -> bytes:
    return zlib.compress(content, 6)


def decompress(blob: bytes, compression: str | None) -> bytes:
    return zlib.decompress(blob) if compression == COMPRESSION else blob


class LogFetcher:
    """Asks the API for each log's location in the calling thread, only when a download worker
    is free, so each blob is fetched right after its URL is issued (GitHub's expire after a
    minute); a URL that is older than that, or that the blob host refuses, is asked for
    again. API calls stay sequential while downloads overlap."""

    def __init__(self, client: GitHubClient, repo: str, workers: int) -> None:
        self.client = client
        self.repo = repo
        self.workers = workers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="log")

    def fetch(
        self, jobs: Sequence[dict[str, Any]], on_done: Callable[[], None] = lambda: None
    ) -> list[LogResult]:
        results: dict[int, LogResult] = {}
        todo = list(jobs)
        for _round in range(URL_ROUNDS):
            todo = self._round(todo, results, on_done)
            if not todo:
                break
        for job in todo:
            results[id(job)] = LogResult(
                job, "error", error=f"log URL refused or expired {URL_ROUNDS} times"
            )
            on_done()
        return [results[id(job)] for job in jobs]

    def _round(
        self,
        jobs: Sequence[dict[str, Any]],
        results: dict[int, LogResult],
        on_done: Callable[[], None],
    ) -> list[dict[str, Any]]:
        """One pass over ``jobs``; returns those whose URL went stale before the download."""
        free = threading.Semaphore(self.workers)
        pending: list[tuple[dict[str, Any], Future[LogResult]]] = []
        for job in jobs:
            if not ran(job):
                results[id(job)] = LogResult(job, "missing")  # never ran: no log exists
                on_done()
                continue
            free.acquire()
            status, location = self.client.log_location(self.repo, job["id"])
            if status == 302 and location:
                future = self.pool.submit(self._download, job, location, time.monotonic())
                future.add_done_callback(lambda _f: free.release())
                pending.append((job, future))
            else:
                free.release()
                results[id(job)] = LogResult(job, "expired" if status == 410 else "missing")
                on_done()
        stale = []
        for job, future in pending:
            result = future.result()
            if result.status == "stale":
                stale.append(job)
                continue
            results[id(job)] = result
            on_done()
        return stale

    def _download(self, job: dict[str, Any], location: str, issued: float) -> LogResult:
        """Download and classify in a worker thread: the scan releases the GIL in Hyperscan."""
        if time.monotonic() - issued > URL_LIFETIME:
            return LogResult(job, "stale")
        try:
            result = LogResult(job, "ok", content=self.client.download(location))
        except BlobExpired:
            return LogResult(job, "stale")
        except BlobGone:
            result = LogResult(job, "missing")
        except CollectError as exc:
            return LogResult(job, "error", error=str(exc))
        result.classification  # noqa: B018 - computed here, in the pool, and cached
        return result

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def job_payload(job: Job, annotations: Sequence[str]) -> dict[str, Any]:
    """A stored job as the fields of GitHub's payload that classification reads, with its
    failure-level annotation messages."""
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_attempt": job.run_attempt,
        "name": job.name,
        "runner_name": job.runner_name,
        "steps": job.steps,
        "annotations": list(annotations),
    }


def classify(job: dict[str, Any], content: bytes | None) -> Classification:
    """Classify a failed job from its log (if any), its annotations and its steps; the job
    payload carries its failure-level annotation messages under ``annotations``."""
    result = classify_job(
        job_name=job.get("name"),
        failed_steps=failed_steps(job),
        annotations=job.get("annotations") or (),
        log=content,
    )
    return replace(result, stage=stage_of(stopped_steps(job)))


def log_row(result: LogResult, now: datetime) -> dict[str, Any]:
    content = result.content
    return {
        "job_id": result.job["id"],
        "status": result.status,
        "content": compress(content) if content is not None else None,
        "compression": COMPRESSION if content is not None else None,
        "size": len(content) if content is not None else None,
        "sha256": hashlib.sha256(content).hexdigest() if content is not None else None,
        "error": result.error,
        "fetched_at": now,
    }


def failure_row(
    run_id: int, attempt: int, job_id: int, result: Classification, now: datetime
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "run_attempt": attempt,
        "job_id": job_id,
        "category": result.category,
        "rule": result.rule,
        "signature": result.signature,
        "line_number": result.line_number,
        "line": result.line,
        "context": list(result.context),
        "env": dict(result.env),
        "classifier_version": result.rules_version,
        "classified_at": now,
        "evidence": result.evidence,
        "stage": result.stage,
    }


def save_logs_and_failures(session: Session, results: Sequence[LogResult]) -> None:
    """Archive each log and record why its job failed (from the log, or from the job's own
    evidence when the log is gone)."""
    now = datetime.now(UTC)
    logs = [log_row(r, now) for r in results]
    failures = [
        failure_row(
            r.job["run_id"],
            r.job.get("run_attempt") or 1,
            r.job["id"],
            r.classification,
            now,
        )
        for r in results
    ]
    upsert(session, JobLog, logs)
    upsert(session, Failure, failures)


def save_run_failure(session: Session, run: dict[str, Any]) -> None:
    """A run that failed with no jobs, or ended ``startup_failure``: its workflow file was
    invalid (``ci_config``)."""
    result = classify_job(job_name=None, no_jobs=True)
    upsert(
        session,
        Failure,
        [failure_row(run["id"], run.get("run_attempt") or 1, 0, result, datetime.now(UTC))],
    )
