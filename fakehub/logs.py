"""Job log text, generated on request from the job's seed (nothing is kept in memory).

The text follows GitHub's job-log format: a BOM, one `<ISO time with 7 digits>Z <text>` line per
entry, `##[group]`/`##[endgroup]` per step, `##[error]` annotations and raw ANSI colours. A failed
job's failing step ends with one of `messages.FORMS`; `render` also returns which line that is,
which is the ground truth the classifier is measured against. Each step's normal output is
`fakehub.step_logs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random

from fakehub import messages
from fakehub.records import Job, Run
from fakehub.step_logs import step_body
from fakehub.steps import Step, plan
from fakehub.workflow_files import step_limit


@dataclass(frozen=True)
class Rendered:
    """A job log and, for a failed job, the 1-based line that shows its category; `notes` are
    the (level, message) of each step's `##[error]`/`##[warning]` lines, at most `PER_STEP` of
    a level per step: what GitHub keeps as the job's check-run annotations."""

    text: str
    line_number: int | None
    line: str | None
    notes: tuple[tuple[str, str], ...] = ()


PER_STEP = 10  # annotations of one level that one step can produce (community discussion #68471)
NOTE_LEVELS = (("##[error]", "failure"), ("##[warning]", "warning"))


def step_notes(body: list[str]) -> list[tuple[str, str]]:
    """The annotations one step's lines produce."""
    notes: list[tuple[str, str]] = []
    for prefix, level in NOTE_LEVELS:
        lines = [line[len(prefix) :] for line in body if line.startswith(prefix)]
        notes += [(level, message) for message in lines[:PER_STEP]]
    return notes


def stamp(at: datetime, rng: Random) -> str:
    """The runner's timestamp, 7 fractional digits (its last one drawn): one per log line, so
    formatted by hand (strftime was half the time of fakehub's ground truth)."""
    return (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d}T{at.hour:02d}:{at.minute:02d}:"
        f"{at.second:02d}.{at.microsecond:06d}{rng.randrange(10)}Z"
    )


class _Writer:
    """Collects timestamped lines, spreading each step's lines across its time span."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.lines: list[str] = []

    def step(self, step: Step, body: list[str]) -> int:
        """Write one step's lines; returns the index of its first line."""
        first = len(self.lines)
        start = step.started_at
        end = step.completed_at or start
        assert start is not None and end is not None
        span = max((end - start).total_seconds(), 0.001)
        for i, text in enumerate(body):
            at = start + timedelta(seconds=span * i / max(len(body), 1))
            self.lines.append(f"{stamp(at, self.rng)} {text}")
        return first


class _Draws(_Writer):
    """Writes nothing but draws what ``_Writer`` draws (each line's last timestamp digit), so
    that the steps after it say the same: a job's notes without formatting its whole log,
    which was most of the cost of fakehub's annotations route."""

    def __init__(self, rng: Random) -> None:
        super().__init__(rng)
        self.written = 0

    def step(self, step: Step, body: list[str]) -> int:
        first, self.written = self.written, self.written + len(body)
        for _ in body:
            self.rng.randrange(10)
        return first


def render(job: Job, run: Run, repo: str) -> Rendered:
    """The whole log of a job that ran; deterministic for the job's seed."""
    writer = _Writer(Random(job.seed))
    signal, notes = _write(job, run, repo, writer)
    text = "\ufeff" + "\n".join(writer.lines) + "\n"
    if signal is None:
        return Rendered(text, None, None, notes)
    return Rendered(text, signal + 1, writer.lines[signal], notes)


def log_notes(job: Job, run: Run, repo: str) -> tuple[tuple[str, str], ...]:
    """``render(job, run, repo).notes`` without making the log's text."""
    return _write(job, run, repo, _Draws(Random(job.seed)))[1]


def _write(
    job: Job, run: Run, repo: str, writer: _Writer
) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    """Write the job's steps with ``writer``, drawing from its random stream: (the index of
    the line that shows the failure, or None; the notes)."""
    rng = writer.rng
    values = messages.context(
        rng,
        job.runner_name or "",
        job.spec.timeout_minutes(job.created_at),
        job.spec.algo,
        job.created_at,
    )
    signal: int | None = None
    notes: list[tuple[str, str]] = []
    for step in plan(job):
        if step.started_at is None:
            continue
        body = step_body(rng, job, run, repo, step, values)
        if step.conclusion in ("failure", "cancelled") and job.category is not None:
            # the runner names the step whose own limit fired (actions/runner StepsRunner.cs)
            minutes = step_limit(job.spec, job.created_at) or values["limit"]
            values.update(step=step.name, step_minutes=minutes)
            block, index = messages.failure_block(rng, _forms(job, run), values)
            cut = rng.randint(len(body) // 2, len(body)) if step.kind == "test" else len(body)
            body = body[:cut] + block
            if not block[-1].startswith("##[error]") and not block[index].startswith("##[error]"):
                code = messages.exit_code(rng, job.category, block)
                body.append(f"##[error]Process completed with exit code {code}.")
            signal = writer.step(step, body) + cut + index
        else:
            if step.conclusion == "cancelled":  # a concurrency cancel stops the running step
                body.append("##[error]The operation was canceled.")
            writer.step(step, body)
        notes += step_notes(body)
    return signal, tuple(notes)


def _forms(job: Job, run: Run) -> tuple[str, ...]:
    assert job.category is not None
    if job.incident is not None:  # one cause, one message: every job it hits prints the same
        return (">>" + job.incident.message.replace("{", "{{").replace("}", "}}"),)
    if run.workflow.broken_step(job.spec.id, run.created_at) == "missing_script":
        return messages.MISSING_SCRIPT
    if job.spec.kind == "setup":
        return messages.SETUP_FAILURES
    if job.category == "timeout":
        return messages.TIMEOUT_FORMS[job.cause or "inner_timeout"]
    return messages.FORMS[job.category]
