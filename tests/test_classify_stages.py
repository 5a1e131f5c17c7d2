"""The stage table (collector/classify/stages.toml) on the step names verl's jobs really have,
and the evidence the engine reports for each kind of decision."""

from __future__ import annotations

import pytest

from collector.classify import classify_job
from collector.classify.stages import load_stages, stage_of
from fakehub.history import DEFAULT_END, History
from fakehub.steps import layout

STEPS = [
    ("Set up job", "setting up the job"),
    ("Initialize containers", "setting up the job"),
    ("Run volcengine/vemlp-github-runner@v1", "setting up the job"),
    ("Run actions/checkout@v4", "checking out"),
    ("Check npu and CANN info", "checking the environment"),
    ("Check final pip list", "checking the environment"),
    ("Install the current repository", "installing"),
    ("Prepare GSM8K dataset", "preparing data"),
    ("Prepare weights", "preparing data"),
    ("Running the E2E test with fully_async_policy algorithm (FSDP2)", "testing"),
    ("Run V1 separate_async with Megatron", "testing"),
    ("Run TensorRT-LLM async rollout unit tests", "testing"),
    ("Stop containers", "cleaning up"),
    ("Post Run actions/checkout@v4", "cleaning up"),
    ("Complete job", "cleaning up"),
]


@pytest.mark.parametrize(("step", "stage"), STEPS)
def test_verl_step_names_have_their_stage(step, stage):
    assert stage_of([step]) == stage


def test_every_stage_is_used_and_no_step_means_no_stage():
    assert {stage for _, stage in STEPS} == {name for name, _ in load_stages()}
    assert stage_of([]) is None and stage_of(["Something else entirely"]) is None


def test_every_step_fakehub_simulates_has_a_stage():
    history = History(1, 0.02, DEFAULT_END)
    names = {name for job in history.job_by_id.values() for name, _, _ in layout(job)}
    assert {n for n in names if stage_of([n]) is None} == set()


@pytest.mark.parametrize(
    ("kwargs", "category", "evidence"),
    [
        ({"log": b"2026-01-01T00:00:00.0000000Z CUDA out of memory. Tried\n"}, "oom", "log"),
        ({"annotations": ["Process completed with exit code 137."]}, "oom", "annotations"),
        ({"failed_steps": ["Check npu and CANN info"]}, "npu_env", "job"),
        ({"no_jobs": True}, "ci_config", "job"),
        ({"annotations": ["Process completed with exit code 1."]}, "unknown", "none"),
        ({}, "unknown", "none"),
    ],
)
def test_evidence_names_what_decided(kwargs, category, evidence):
    result = classify_job(**kwargs)
    assert (result.category, result.evidence) == (category, evidence)
