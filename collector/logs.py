"""Logs of failed jobs: where the API says they are (sequential, it is the API), downloaded
without the token in a small pool, archived compressed, and classified as they arrive.

A log never sits whole in memory: it is compressed chunk by chunk as it downloads into one zlib
stream (store.compression, the stored format), classified from a stream that inflates it again,
and written to the database in chunks (store.blobs)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from sqlalchemy.orm import Session

from collector.annotations import time_limit_fact
from collector.classify import Classification, RuleSet, classify_job
from collector.classify.engine import LogSource
from collector.classify.stages import stage_of
from collector.client import BlobExpired, BlobGone, CollectError, GitHubClient, ResourceError
from collector.payloads import failed_steps, ran, stopped_steps
from store.blobs import write_log_content
from store.compression import COMPRESSION, CompressedLog, compress
from store.models import Failure, Job, JobLog
from store.triage import apply_corrections
from store.upsert import upsert

URL_LIFETIME = 50.0  # seconds a log URL is trusted: GitHub's expire after 60
URL_ROUNDS = 3  # times a job's log URL is asked for before its download counts as failed
INLINE_BYTES = 4 << 20  # compressed logs up to this size are stored with their row at once


@dataclass
class LogResult:
    job: dict[str, Any]
    status: str  # ok | expired | missing | error | given_up (| stale: the URL expired, ask again)
    content: bytes | None = None  # the log itself (reclassify), or:
    error: str | None = None
    http_status: int | None = None  # the API's answer when it refused the log's location
    log: CompressedLog | None = None  # the log as downloaded, compressed (a collect)
    rules: RuleSet | None = None  # the repository's rule set (None: the built-in rules)

    @cached_property
    def classification(self) -> Classification:
        if self.log is not None:
            with self.log.open() as stream:
                return classify(self.job, stream, self.rules)
        return classify(self.job, self.content, self.rules)


class LogFetcher:
    """Asks the API for each log's location in the calling thread, only when a download worker
    is free, so each blob is fetched right after its URL is issued (GitHub's expire after a
    minute); a URL that is older than that, or that the blob host refuses, is asked for
    again. API calls stay sequential while downloads overlap."""

    def __init__(
        self, client: GitHubClient, repo: str, workers: int, rules: RuleSet | None = None
    ) -> None:
        self.client = client
        self.repo = repo
        self.workers = workers
        self.rules = rules  # the repository's, compiled once for all its logs
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
            results[id(job)] = self._result(
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
                results[id(job)] = self._result(job, "missing")  # never ran: no log exists
                on_done()
                continue
            free.acquire()
            try:
                status, location = self.client.log_location(self.repo, job["id"])
            except ResourceError as exc:  # this log's fault: recorded, asked again later
                free.release()
                results[id(job)] = self._result(
                    job, "error", error=str(exc), http_status=exc.status
                )
                on_done()
                continue
            if status == 302 and location:
                future = self.pool.submit(self._download, job, location, time.monotonic())
                future.add_done_callback(lambda _f: free.release())
                pending.append((job, future))
            else:
                free.release()
                results[id(job)] = _without_log(job, status, self.rules)
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
        """Download and classify in a worker thread: the scan releases the GIL in Hyperscan,
        zlib releases it too. The log is compressed as it arrives, never held whole."""
        if time.monotonic() - issued > URL_LIFETIME:
            return self._result(job, "stale")
        log = CompressedLog()
        try:
            self.client.download(location, log)
        except BlobExpired:
            log.close()
            return self._result(job, "stale")
        except BlobGone:
            log.close()
            result = self._result(job, "missing")
        except CollectError as exc:
            log.close()
            return self._result(job, "error", error=str(exc))
        else:
            result = self._result(job, "ok", log=log.finish())
        result.classification  # noqa: B018 - computed here, in the pool, and cached
        return result

    def _result(self, job: dict[str, Any], status: str, **fields: Any) -> LogResult:
        return LogResult(job, status, rules=self.rules, **fields)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _without_log(job: dict[str, Any], status: int, rules: RuleSet | None) -> LogResult:
    """The API's answer without a log URL: 410 expired; 404 for a job that ran is asked once
    more by a later collect (``store.retries.NOT_FOUND_TRIES``) before it counts as missing;
    a server that answers 200 sent no URL to follow."""
    if status == 410:
        return LogResult(job, "expired", rules=rules)
    if status == 404:
        return LogResult(job, "error", error="log not found (404)", http_status=404, rules=rules)
    return LogResult(job, "missing", rules=rules)


def job_payload(job: Job, annotations: Sequence[str]) -> dict[str, Any]:
    """A stored job as the fields of GitHub's payload that classification reads, with its
    failure-level annotation messages."""
    payload = {
        "id": job.id,
        "run_id": job.run_id,
        "run_attempt": job.run_attempt,
        "name": job.name,
        "runner_name": job.runner_name,
        "steps": job.steps,
        "annotations": list(annotations),
    }
    return payload | {"time_limit": time_limit_fact(payload, bool(job.timed_out))}


def classify(
    job: dict[str, Any], content: LogSource | None, rules: RuleSet | None = None
) -> Classification:
    """Classify a failed job from its log (if any), its annotations and its steps with its
    repository's ``rules``; the job payload carries its failure-level annotation messages
    under ``annotations``."""
    result = classify_job(
        job_name=job.get("name"),
        failed_steps=failed_steps(job),
        annotations=job.get("annotations") or (),
        time_limit=job.get("time_limit"),
        log=content,
        rules=rules,
    )
    return replace(result, stage=stage_of(stopped_steps(job)))


def log_row(result: LogResult, now: datetime) -> dict[str, Any]:
    """The ``job_logs`` row of a result; a compressed log over ``INLINE_BYTES`` leaves
    ``content`` empty here, for ``save_logs_and_failures`` to write in chunks."""
    log, content = result.log, result.content
    if log is not None:
        inline = log.compressed() if log.compressed_size <= INLINE_BYTES else None
        stored, size, sha256 = inline, log.size, log.sha256
    elif content is not None:
        stored, size, sha256 = compress(content), len(content), hashlib.sha256(content).hexdigest()
    else:
        stored = size = sha256 = None
    return {
        "job_id": result.job["id"],
        "status": result.status,
        "content": stored,
        "compression": COMPRESSION if log is not None or content is not None else None,
        "size": size,
        "sha256": sha256,
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
        "classifier_category": result.category,
        "classifier_evidence": result.evidence,
    }


def save_logs_and_failures(session: Session, results: Sequence[LogResult]) -> None:
    """Archive each log and record why its job failed (from the log, or from the job's own
    evidence when the log is gone), a maintainer's correction of its signature applied; the
    caller marks the runs for their derived rows in the same transaction."""
    now = datetime.now(UTC)
    logs = [log_row(r, now) for r in results]
    upsert(session, JobLog, logs)
    for result, row in zip(results, logs, strict=True):
        if result.log is not None and row["content"] is None:
            log = result.log
            write_log_content(session, result.job["id"], log.compressed_size, log.chunks())
    save_failures(session, results, now)
    for result in results:
        if result.log is not None:
            result.log.close()


def save_failures(session: Session, results: Sequence[LogResult], now: datetime) -> None:
    """Record why each job failed (its classification), a maintainer's correction of its
    signature applied over it."""
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
    upsert(session, Failure, failures)
    apply_corrections(session, [row["run_id"] for row in failures])


def run_classification(rules: RuleSet | None) -> Classification:
    """The classification of a run that failed with no jobs (``rules``: the repository's)."""
    return classify_job(job_name=None, no_jobs=True, rules=rules)


def save_run_failure(session: Session, run: dict[str, Any], rules: RuleSet | None) -> None:
    """A run that failed with no jobs, or ended ``startup_failure``: its workflow file was
    invalid (``ci_config``, unless the repository's own rules say otherwise)."""
    result = run_classification(rules)
    upsert(
        session,
        Failure,
        [failure_row(run["id"], run.get("run_attempt") or 1, 0, result, datetime.now(UTC))],
    )
    apply_corrections(session, [run["id"]])
