"""``ciflake reclassify``: the rules changed, the archived logs did not; no download needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from analytics import derived
from collector.annotations import messages
from collector.classify import RULES_VERSION, Classification, RuleSet
from collector.classify.rules import with_own_rules
from collector.logs import LogResult, failure_row, job_payload, run_classification
from store import bookkeeping
from store.compression import decompress
from store.models import Failure, Job
from store.project import Project
from store.triage import apply_corrections
from store.upsert import upsert

FLUSH_EVERY = 200


def _answers(
    reader: Session, rules_of: Callable[[str], RuleSet]
) -> Iterable[tuple[tuple[int, int, int], Classification]]:
    """(run id, attempt, job id) and the new classification of every stored failure: each
    failed job's from its archived log and annotations; each run that failed with no jobs
    (job id 0) from the run alone, as the collect classified it."""
    notes = bookkeeping.all_annotations(reader)
    for job, content, repo in _failed_jobs(reader):
        status = "ok" if content is not None else "missing"
        payload = job_payload(job, messages(notes.get(job.id)))
        answer = LogResult(payload, status, content=content, rules=rules_of(repo))
        yield (job.run_id, job.run_attempt, job.id), answer.classification
    for failure, repo in bookkeeping.run_failures(reader):
        yield (failure.run_id, failure.run_attempt, 0), run_classification(rules_of(repo))


def _failed_jobs(reader: Session) -> Iterable[tuple[Job, bytes | None, str]]:
    """Each failed job with its archived log and repository, one at a time; then those whose
    log is gone."""
    for job, log, repo in bookkeeping.archived_logs(reader):
        yield job, decompress(log.content or b"", log.compression), repo
    for job, repo in bookkeeping.jobs_without_logs(reader):
        yield job, None, repo


def _save(
    writer: Session, rows: list[dict[str, Any]], project_of: Callable[[str], Project]
) -> None:
    """The classifier's new answers, the maintainers' corrections applied over them, and the
    derived rows of their runs and their repositories' incidents, in one transaction."""
    with writer.begin():
        upsert(writer, Failure, rows)
        apply_corrections(writer, [row["run_id"] for row in rows])
        repos = bookkeeping.repo_of_runs(writer, sorted({row["run_id"] for row in rows}))
        for repo in sorted(set(repos.values())):
            run_ids = sorted(run for run, of in repos.items() if of == repo)
            project = project_of(repo)
            derived.refresh(writer.connection(), run_ids, project.job_name_strip)
            derived.refresh_incidents(writer.connection(), repo, project.analysis.incidents)


def reclassify_all(
    engine: Engine, project_of: Callable[[str], Project]
) -> tuple[int, int, tuple[str, ...]]:
    """Classify every failed job, and every run that failed with no jobs, again with its
    repository's rules (its own [[rules]] first), and the derived rows of their runs in the
    same transactions with its job-name rule; each repository's settings are
    ``project_of(repo)``. Returns (failures whose category, rule or signature changed, total,
    the rules versions used)."""

    @cache
    def rules_of(repo: str) -> RuleSet:  # compiled once per repository
        return with_own_rules(project_of(repo).rules)

    changed = total = 0
    versions: set[str] = set()
    now = datetime.now(UTC)
    pending: list[dict[str, Any]] = []
    with Session(engine) as reader, Session(engine) as writer:
        before = {
            (f.run_id, f.run_attempt, f.job_id): (f.classifier_category, f.rule, f.signature)
            for f in bookkeeping.all_failures(reader)
        }
        for key, result in _answers(reader, rules_of):
            versions.add(result.rules_version)
            changed += before.get(key) != (result.category, result.rule, result.signature)
            pending.append(failure_row(*key, result, now))
            total += 1
            if len(pending) >= FLUSH_EVERY:
                _save(writer, pending, project_of)
                pending = []
        _save(writer, pending, project_of)
    return changed, total, tuple(sorted(versions)) or (RULES_VERSION,)
