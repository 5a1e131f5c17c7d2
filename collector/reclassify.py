"""``ciflake reclassify``: the rules changed, the archived logs did not; no download needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from analytics import derived
from collector.annotations import messages
from collector.classify import RULES_VERSION
from collector.logs import LogResult, failure_row, job_payload
from store import bookkeeping
from store.compression import decompress
from store.models import Failure, Job
from store.triage import apply_corrections
from store.upsert import upsert

FLUSH_EVERY = 200


def _failed_jobs(reader: Session) -> Iterable[tuple[Job, bytes | None]]:
    """Each failed job with its archived log, one at a time; then those whose log is gone."""
    for job, log in bookkeeping.archived_logs(reader):
        yield job, decompress(log.content or b"", log.compression)
    for job in bookkeeping.jobs_without_logs(reader):
        yield job, None


def _save(writer: Session, rows: list[dict[str, Any]], strip_of: Callable[[str], str]) -> None:
    """The classifier's new answers, the maintainers' corrections applied over them, and the
    derived rows of their runs, in one transaction."""
    with writer.begin():
        upsert(writer, Failure, rows)
        apply_corrections(writer, [row["run_id"] for row in rows])
        repos = bookkeeping.repo_of_runs(writer, sorted({row["run_id"] for row in rows}))
        for repo in sorted(set(repos.values())):
            run_ids = sorted(run for run, of in repos.items() if of == repo)
            derived.refresh(writer.connection(), run_ids, strip_of(repo))


def reclassify_all(engine: Engine, strip_of: Callable[[str], str]) -> tuple[int, int, str]:
    """Classify every failed job again, and the derived rows of their runs in the same
    transactions, each repository's with its job-name rule ``strip_of(repo)``. Returns
    (failures whose category, rule or signature changed, total, rules version)."""
    changed = total = 0
    now = datetime.now(UTC)
    pending: list[dict[str, Any]] = []
    with Session(engine) as reader, Session(engine) as writer:
        before = {
            (f.run_id, f.run_attempt, f.job_id): (f.classifier_category, f.rule, f.signature)
            for f in bookkeeping.job_failures(reader)
        }
        notes = bookkeeping.all_annotations(reader)
        for job, content in _failed_jobs(reader):
            status = "ok" if content is not None else "missing"
            payload = job_payload(job, messages(notes.get(job.id)))
            result = LogResult(payload, status, content=content).classification
            key = (job.run_id, job.run_attempt, job.id)
            changed += before.get(key) != (result.category, result.rule, result.signature)
            pending.append(failure_row(job.run_id, job.run_attempt, job.id, result, now))
            total += 1
            if len(pending) >= FLUSH_EVERY:
                _save(writer, pending, strip_of)
                pending = []
        _save(writer, pending, strip_of)
    return changed, total, RULES_VERSION
