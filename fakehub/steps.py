"""The step list of a simulated job, shared by the jobs payload and the log renderer.

Steps follow the real verl job layouts (vemlp `setup`/`cleanup`, GPU jobs with install and
dataset steps, Ascend jobs in containers with the "Check npu and CANN info" step); verl-recipe's
DAPO jobs have the same layout with their own dataset and test step names. A failing
job fails in the step its category points to; later steps are skipped, post steps still run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random

from fakehub.catalog import JobSpec, parse_time
from fakehub.records import Job

# A job whose test step hit its own limit: the other steps take this share of the job's limit
# (with the step's nine tenths, the job still ends before its own limit).
OTHER_STEPS_SHARE = 0.05

UV_ERA = parse_time("2026-08-17T06:10:00Z")
PIP_LIST_FROM = parse_time("2026-06-03T07:51:40Z")
NPU_INFO_STEP = "Check npu and CANN info"
RUNNER_ACTION = "Run volcengine/vemlp-github-runner@v1"
CHECKOUT = "Run actions/checkout@v4"
# Where each kind of incident shows: a stuck host in the NPU check, the Hub's outage and the bad
# image's missing module when the test loads its model and imports.
INCIDENT_STEPS = {"host": "npu_info", "hub": "test", "image": "test"}
DATASET_STEPS = {"dapo": "Prepare DAPO-Math-17k dataset"}  # by algo; else GSM8K's, as verl's


@dataclass(frozen=True)
class Step:
    """One step as the API shows it; `kind` tells the log renderer what to print."""

    number: int
    name: str
    kind: str
    status: str
    conclusion: str | None
    started_at: datetime | None
    completed_at: datetime | None


def test_step_name(spec: JobSpec) -> str:
    strategy = {"fsdp2": "FSDP2", "megatron": "Megatron"}.get(spec.strategy, spec.strategy)
    if spec.algo == "dapo":  # verl-recipe's DAPO jobs
        where = " on Ascend NPU" if spec.kind == "npu_test" else ""
        return f"Run the DAPO recipe e2e with {strategy}{where}"
    if spec.algo.startswith("v1_separate_async"):
        what = "Multi-Teacher OPD" if spec.algo.endswith("opd") else strategy
        return f"Run V1 separate_async with {what}"
    if spec.kind == "npu_test":
        return f"Running the E2E test with {spec.algo} algorithm ({strategy}) on ASCEND NPU"
    if spec.strategy == "unit":
        return "Run TensorRT-LLM async rollout unit tests"
    return f"Running the E2E test with {spec.algo} algorithm ({strategy})"


def layout(job: Job) -> list[tuple[str, str, float]]:
    """(name, kind, share of the job's time) for every step of this job, in order."""
    kind, at = job.spec.kind, job.created_at
    if kind == "setup":
        return [
            ("Set up job", "setup_job", 0.1),
            (CHECKOUT, "checkout", 0.15),
            (RUNNER_ACTION, "create_runner", 0.65),
            ("Post Run actions/checkout@v4", "post", 0.05),
            ("Complete job", "complete", 0.05),
        ]
    if kind == "cleanup":
        return [
            ("Set up job", "setup_job", 0.2),
            (RUNNER_ACTION, "destroy_runner", 0.7),
            ("Complete job", "complete", 0.1),
        ]
    steps: list[tuple[str, str, float]] = [("Set up job", "setup_job", 0.02)]
    if kind == "npu_test":
        npu_name = "Check NPU and CANN info" if "v1" in job.spec.tags else NPU_INFO_STEP
        steps += [("Initialize containers", "containers", 0.08), (npu_name, "npu_info", 0.01)]
    steps.append((CHECKOUT, "checkout", 0.03))
    if not (kind == "gpu_test" and "v1" in job.spec.tags and at >= UV_ERA):
        steps.append(("Install the current repository", "install", 0.2))
    if at >= PIP_LIST_FROM:
        steps.append(("Check final pip list", "pip_list", 0.01))
    if kind == "npu_test":
        steps.append(("Prepare weights", "weights", 0.01))
    steps += [
        (DATASET_STEPS.get(job.spec.algo, "Prepare GSM8K dataset"), "dataset", 0.04),
        (test_step_name(job.spec), "test", 0.58),
        ("Post Run actions/checkout@v4", "post", 0.01),
    ]
    if kind == "npu_test":
        steps.append(("Stop containers", "stop_containers", 0.01))
    steps.append(("Complete job", "complete", 0.005))
    return steps


def failing_kind(job: Job) -> str | None:
    """The step kind where this job's failure shows (drawn from the job's seed)."""
    category = job.category
    if category is None:
        return None
    if job.spec.kind == "setup":
        return "create_runner"
    if job.spec.kind == "cleanup":
        return "destroy_runner"
    kinds = {name for _, name, _ in layout(job)}
    if job.incident is not None:
        return next(k for k in (INCIDENT_STEPS[job.incident.kind], "test") if k in kinds)
    rng = Random(job.seed ^ 0x5EED)
    choices = {
        "missing_dependency": ("install", "install", "test"),
        "network": ("install", "dataset", "test", "checkout"),
        "npu_env": ("npu_info", "npu_info", "test"),
        "infra": ("containers", "test") if job.spec.kind == "npu_test" else ("setup_job", "test"),
    }.get(category, ("test",))
    return next((k for k in rng.sample(choices, len(choices)) if k in kinds), "test")


def plan(job: Job) -> list[Step]:
    """The job's steps with times and outcomes; empty for jobs no runner took."""
    if not job.ran or job.started_at is None:
        return []
    end = job.completed_at
    span = ((end or job.started_at) - job.started_at).total_seconds()
    parts = layout(job)
    failing = failing_kind(job)
    fail_index = next((i for i, (_, k, _) in enumerate(parts) if k == failing), None)
    if fail_index is None and job.conclusion == "cancelled":
        fail_index = next(
            i
            for i, (_, k, _) in enumerate(parts)
            if k in ("test", "create_runner", "destroy_runner")
        )
    if end is None:  # still running: the test step is the live one
        fail_index = next(
            i
            for i, (_, k, _) in enumerate(parts)
            if k in ("test", "create_runner", "destroy_runner")
        )
    weights = [
        share
        for i, (_, kind, share) in enumerate(parts)
        if fail_index is None or i <= fail_index or kind in ("post", "complete", "stop_containers")
    ]
    total = sum(weights)
    # A step that hit its own limit runs that long; the other steps share the rest.
    limited = job.cause == "step_time_limit" and fail_index is not None
    step_seconds = span - job.limit_minutes * OTHER_STEPS_SHARE * 60 if limited else 0.0
    if limited:
        total -= parts[fail_index][2]  # type: ignore[index]
        span -= step_seconds
    clock, steps = job.started_at, []
    for i, (name, kind, share) in enumerate(parts):
        after = fail_index is not None and i > fail_index
        if after and kind not in ("post", "complete", "stop_containers"):
            steps.append(Step(i + 1, name, kind, "completed", "skipped", None, None))
            continue
        if end is None and after:
            steps.append(Step(i + 1, name, kind, "queued", None, None, None))
            continue
        seconds = step_seconds if limited and i == fail_index else span * share / total
        begin, clock = clock, clock + timedelta(seconds=seconds)
        if end is None and i == fail_index:
            steps.append(Step(i + 1, name, kind, "in_progress", None, begin, None))
            continue
        conclusion = "success"
        if i == fail_index:
            conclusion = "cancelled" if job.conclusion == "cancelled" else "failure"
        steps.append(
            Step(i + 1, name, kind, "completed", conclusion, begin, min(clock, end or clock))
        )
    return steps
