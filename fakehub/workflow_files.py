"""A tracked workflow file as it stood at a commit, served by the contents API.

Only what the collector reads is modelled: its triggers (`on:`, with a scheduled workflow's
cron lines and their timezone), each job's `timeout-minutes` (absent: GitHub's default of 360)
and its test step's own `timeout-minutes`, both as the catalog dates them, so a limit changed
between two versions of a file shows in the file at each commit. verl's files set job limits of
10 to 120 minutes (fakehub/data/verl_ci.json); the step limit is ours.
"""

from __future__ import annotations

from datetime import datetime

from fakehub.catalog import JobSpec, WorkflowSpec

TEST_KINDS = ("gpu_test", "npu_test")
# A test step's limit, of its job's: above the longest share a test step takes of a job that
# runs to the job's limit (0.84, verl's v1 jobs without an install step), so that only a step
# that hangs reaches it.
STEP_LIMIT_SHARE = 0.9
DEFAULT_LIMIT_MINUTES = 360  # GitHub's `timeout-minutes` when a job sets none


def job_limit(spec: JobSpec, at: datetime) -> int | None:
    """The job's `timeout-minutes` in the file at ``at``; None: unset (GitHub's default)."""
    limit = spec.timeout_minutes(at)
    return None if limit == DEFAULT_LIMIT_MINUTES else limit


def step_limit(spec: JobSpec, at: datetime) -> int | None:
    """The test step's own `timeout-minutes`: nine tenths of the job's (rounded), so that a
    step that reaches it still ends before the job's own limit."""
    limit = job_limit(spec, at)
    if limit is None or spec.kind not in TEST_KINDS:
        return None
    return max(1, round(limit * STEP_LIMIT_SHARE))


def render(workflow: WorkflowSpec, at: datetime, test_step: dict[str, str]) -> str:
    """The workflow file at ``at``: its jobs, limits and named test steps (YAML).
    ``test_step``: each job id's test step name."""
    lines = [f"name: {workflow.name}", *triggers(workflow), "jobs:"]
    for spec in workflow.jobs_at(at):
        lines += [f"  {spec.id}:", f"    name: {spec.name}", "    runs-on: self-hosted"]
        if (limit := job_limit(spec, at)) is not None:
            lines.append(f"    timeout-minutes: {limit}")
        lines += ["    steps:", "      - uses: actions/checkout@v4"]
        if spec.id in test_step:
            lines.append(f'      - name: "{test_step[spec.id]}"')
            if (limit := step_limit(spec, at)) is not None:
                lines.append(f"        timeout-minutes: {limit}")
            lines.append("        run: bash tests/special_e2e/run.sh")
    return "\n".join(lines) + "\n"


def triggers(workflow: WorkflowSpec) -> list[str]:
    """The file's `on:` lines: a flow list of its events, or a mapping when it has cron lines."""
    if not workflow.schedule:
        return [f"on: [{', '.join(workflow.events)}]"]
    lines = ["on:"]
    for event in workflow.events:
        lines.append(f"  {event}:")
        if event == "schedule":
            for entry in workflow.schedule:
                lines.append(f"    - cron: '{entry.cron}'")
                if entry.timezone is not None:
                    lines.append(f"      timezone: '{entry.timezone}'")
    return lines
