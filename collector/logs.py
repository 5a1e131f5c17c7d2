"""Logs of failed jobs: where the API says they are (sequential, it is the API), downloaded
without the token in a small pool, archived compressed, and classified as they arrive."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from sqlalchemy.orm import Session

from collector.classify import Classification, classify_job
from collector.client import CollectError, GitHubClient
from collector.payloads import failed_steps
from store.models import Failure, JobLog
from store.upsert import upsert

COMPRESSION = "zlib"


@dataclass
class LogResult:
    job: dict[str, Any]
    status: str  # ok | expired | missing | error
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
    """Asks the API for each log's location in the calling thread and downloads the blobs in a
    bounded pool, so API calls stay sequential while downloads overlap."""

    def __init__(self, client: GitHubClient, repo: str, workers: int) -> None:
        self.client = client
        self.repo = repo
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="log")

    def fetch(
        self, jobs: Sequence[dict[str, Any]], on_done: Callable[[], None] = lambda: None
    ) -> list[LogResult]:
        pending: list[Future[LogResult] | LogResult] = []
        for job in jobs:
            if not (job.get("runner_name") or job.get("steps")):
                pending.append(LogResult(job, "missing"))  # the job never ran: no log exists
                continue
            status, location = self.client.log_location(self.repo, job["id"])
            if status == 302 and location:
                pending.append(self.pool.submit(self._download, job, location))
            else:
                pending.append(LogResult(job, "expired" if status == 410 else "missing"))
        results = []
        for item in pending:
            results.append(item.result() if isinstance(item, Future) else item)
            on_done()
        return results

    def _download(self, job: dict[str, Any], location: str) -> LogResult:
        """Download and classify in a worker thread: the scan releases the GIL in Hyperscan."""
        try:
            result = LogResult(job, "ok", content=self.client.download(location))
        except CollectError as exc:
            return LogResult(job, "error", error=str(exc))
        result.classification  # noqa: B018 - computed here, in the pool, and cached
        return result

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def classify(job: dict[str, Any], content: bytes | None) -> Classification:
    return classify_job(job_name=job.get("name"), failed_steps=failed_steps(job), log=content)


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
    """A run that failed with no jobs: its workflow file was invalid (``ci_config``)."""
    result = classify_job(job_name=None, no_jobs=True)
    upsert(
        session,
        Failure,
        [failure_row(run["id"], run.get("run_attempt") or 1, 0, result, datetime.now(UTC))],
    )
