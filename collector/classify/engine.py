"""Decide a failed job's category from its log, GitHub's annotations and the job facts.

Every rule's last accepted line counts (PyTorch log-classifier semantics); which one is the root
cause is decided by collector.classify.rootcause: wrappers, consequences, weak and advice text,
then rule order.
"""

from __future__ import annotations

import io
import os
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import BinaryIO

from collector.classify.log_stream import Hit, LogScan, log_scanner
from collector.classify.rootcause import Evidence, Step, decide
from collector.classify.rules import Rule, RuleSet, load_rules
from collector.classify.signature import normalise, signature

LogSource = bytes | bytearray | str | os.PathLike[str] | BinaryIO
GREEN_DIFF_CANDIDATES = 50  # catch-all lines kept when a green log is there to compare with
GREEN_DIFF_MEMORY = 100_000  # error-looking lines remembered from the green log


@dataclass(frozen=True)
class Classification:
    """Why a job failed, as stored with the failure and printed by `ciflake classify`."""

    category: str
    rule: str
    signature: str
    line_number: int | None  # 1-based in the original log; None when no log line decided
    line: str | None
    context: list[str]
    env: dict[str, str]
    rules_version: str
    # What decided: a line of the log, GitHub's annotations, the job's facts (a rule without
    # patterns), or nothing (the catch-all: category unknown). store.vocabulary.EVIDENCE.
    evidence: str = "none"
    stage: str | None = None  # where the job stopped, from its step names (classify.stages)
    # The winner's step, then every other candidate and why it lost (`classify --explain`).
    explanation: tuple[Step, ...] = ()


@contextmanager
def _opened(source: LogSource) -> Iterator[BinaryIO]:
    """A binary stream over `source`: bytes or str are log text; a PathLike is a file to open."""
    if isinstance(source, bytes | bytearray):
        yield io.BytesIO(source)
    elif isinstance(source, str):
        yield io.BytesIO(source.encode("utf-8", errors="surrogateescape"))
    elif isinstance(source, os.PathLike):
        with open(source, "rb") as stream:
            yield stream
    else:
        yield source


def _scan(ruleset: RuleSet, source: LogSource, keep_candidates: int = 1) -> LogScan:
    with _opened(source) as stream:
        return log_scanner(ruleset).scan(stream, keep_candidates)


def _green_lines(ruleset: RuleSet, green_log: LogSource) -> set[str]:
    return {normalise(h.line) for h in _scan(ruleset, green_log, GREEN_DIFF_MEMORY).candidates}


def _pick_candidate(candidates: Sequence[Hit], green: set[str]) -> Hit | None:
    """The last error-looking line, preferring one the green log of the same job lacks."""
    for hit in reversed(candidates):
        if normalise(hit.line) not in green:
            return hit
    return candidates[-1] if candidates else None


def _annotation_scan(ruleset: RuleSet, annotations: Sequence[str]) -> LogScan:
    """Scan GitHub's messages like log lines, minus line numbers: they are not in the log."""
    scanned = _scan(ruleset, "\n".join(annotations))

    def unnumbered(hits: dict[int, Hit]) -> dict[int, Hit]:
        return {i: replace(h, line_number=None, raw_context=()) for i, h in hits.items()}

    candidates = deque(replace(h, line_number=None, raw_context=()) for h in scanned.candidates)
    return LogScan(unnumbered(scanned.hits), unnumbered(scanned.weak), {}, candidates, {})


def _evidence(ruleset: RuleSet, log: LogScan, notes: LogScan, green: set[str]) -> Evidence:
    """Per rule, the lines that support it: a log line first, else an annotation."""
    rules = range(len(ruleset.rules) - 1)
    catch_all = _pick_candidate(log.candidates, green) or _pick_candidate(notes.candidates, set())
    return Evidence(
        strong=[log.hits.get(i) or notes.hits.get(i) for i in rules],
        weak=[log.weak.get(i) or notes.weak.get(i) for i in rules],
        first=dict(log.first),
        catch_all=catch_all,
    )


def classify_job(
    *,
    job_name: str | None = None,
    failed_steps: Sequence[str] = (),
    annotations: Sequence[str] = (),
    no_jobs: bool = False,
    time_limit: str | None = None,
    log: LogSource | None = None,
    green_log: LogSource | None = None,
    rules: RuleSet | None = None,
) -> Classification:
    """Classify one failed job (or a run that failed with `no_jobs`) from all the evidence.

    `annotations` are GitHub's messages for the job ("The job running on runner X has exceeded
    the maximum execution time of 10 minutes", "The runner has received a shutdown signal"...);
    they count like log lines but carry no line number. `time_limit` says how the job, or its
    failed step, ran its whole `timeout-minutes` ("ran 10 of its 10 minutes"), when the
    workflow file shows it; it is the line of a decision it makes without a log line. `log`
    and `green_log` may be absent.
    """
    ruleset = rules or load_rules()
    keep = GREEN_DIFF_CANDIDATES if green_log is not None else 1
    scanned = _scan(ruleset, log, keep) if log is not None else LogScan()
    notes = _annotation_scan(ruleset, annotations) if annotations else LogScan()
    green = _green_lines(ruleset, green_log) if green_log is not None else set()
    evidence = _evidence(ruleset, scanned, notes, green)
    steps = tuple(failed_steps)

    def holds(rule: Rule) -> bool:
        return rule.conditions_hold(job_name, steps, no_jobs, time_limit is not None)

    decision = decide(ruleset, evidence, holds)
    winner, hit = decision.rule, decision.hit
    if winner is ruleset.catch_all:
        decided_by = "none"
    elif not winner.patterns:
        decided_by = "job"
    else:  # annotation hits carry no line number (_annotation_scan)
        decided_by = "log" if hit is not None and hit.line_number is not None else "annotations"
    if hit is None and not winner.patterns:
        hit = next((h for h in evidence.strong if h is not None), evidence.catch_all)
    line = hit.line if hit else None
    if line is None and winner.time_limit:
        line = time_limit  # no line to show: the fact that decided is the line
    return Classification(
        evidence=decided_by,
        explanation=decision.steps,
        category=winner.category,
        rule=winner.name,
        signature=signature(winner.name, hit.line if hit else None),
        line_number=hit.line_number if hit else None,
        line=line,
        context=list(hit.context) if hit else [],
        env=dict(scanned.env),
        rules_version=ruleset.version,
    )


def classify_log(
    source: LogSource,
    *,
    job_name: str | None = None,
    failed_steps: Sequence[str] = (),
    green_log: LogSource | None = None,
    rules: RuleSet | None = None,
) -> Classification:
    """Classify one job log (bytes/str text, a path, or a binary stream), streaming it once."""
    return classify_job(
        job_name=job_name, failed_steps=failed_steps, log=source, green_log=green_log, rules=rules
    )
