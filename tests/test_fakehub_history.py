"""The simulated history has the shapes of verl's real CI (no server involved)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakehub import catalog, failures, logs
from fakehub.annotations import job_notes
from fakehub.catalog import load, parse_time
from fakehub.failures import failure_cause
from fakehub.history import DEFAULT_END, History
from fakehub.logs import render
from fakehub.payloads import iso
from store.vocabulary import CATEGORIES

FIX = parse_time("2026-06-08T03:17:49Z")
MIGRATION = parse_time("2026-08-12T12:44:46Z")


@pytest.fixture(scope="module")
def history() -> History:
    return History(seed=11, scale=0.5, end=DEFAULT_END)


def test_scale_one_generates_in_seconds() -> None:
    start = time.perf_counter()
    full = History(seed=4, scale=1.0, end=DEFAULT_END)
    assert time.perf_counter() - start < 10
    assert 10_000 < len(full.runs) < 40_000


def test_generation_is_deterministic() -> None:
    first, second = (History(seed=4, scale=0.2, end=DEFAULT_END) for _ in range(2))
    assert [(r.id, r.created_at, len(r.attempts)) for r in first.runs] == [
        (r.id, r.created_at, len(r.attempts)) for r in second.runs
    ]
    assert [(j.id, j.category, j.seed) for j in first.job_by_id.values()] == [
        (j.id, j.category, j.seed) for j in second.job_by_id.values()
    ]


def test_pr_scale_thins_the_pull_requests_alone() -> None:
    both = History(seed=4, scale=0.4, end=DEFAULT_END)
    thinned = History(seed=4, scale=0.4, end=DEFAULT_END, pr_scale=0.04)
    events = [Counter(r.event for r in h.runs) for h in (both, thinned)]
    assert 0.08 < events[1]["pull_request"] / events[0]["pull_request"] < 0.12
    assert 0.9 < events[1]["push"] / events[0]["push"] < 1.1


def test_runs_only_while_the_workflow_file_exists(history: History) -> None:
    for run in history.runs:
        assert run.workflow.active(run.created_at), (run.workflow.path, run.created_at)


def test_invalid_windows_make_failed_runs_without_jobs(history: History) -> None:
    invalid = [run for run in history.runs if run.invalid]
    assert invalid, "the fully_async and one_step_off invalid windows must produce runs"
    for run in history.runs:
        inside = run.workflow.invalid_at(run.created_at)
        assert run.invalid == inside
        if inside:
            assert run.latest.conclusion in ("failure", "startup_failure")
            assert run.latest.jobs == [] and len(run.attempts) == 1
    # GitHub has shown both forms for invalid workflow files: fakehub serves both.
    assert {run.latest.conclusion for run in invalid} == {"failure", "startup_failure"}


def test_time_limits_cancel_the_job_and_the_run_when_nothing_else_failed(
    history: History,
) -> None:
    limited = [j for j in history.job_by_id.values() if j.cause == "job_time_limit"]
    assert len(limited) > 5
    for job in limited:
        assert job.conclusion == "cancelled" and job.category == "timeout"
        assert job.completed_at - job.started_at > timedelta(
            minutes=job.spec.timeout_minutes(job.started_at)
        )
        attempt = history.run_by_id[job.run_id].attempts[job.attempt - 1]
        others = {j.conclusion for j in attempt.jobs if j is not job}
        assert attempt.conclusion == ("failure" if "failure" in others else "cancelled")
        assert attempt.red
    stepped = [j for j in history.job_by_id.values() if j.cause == "step_time_limit"]
    assert stepped and all(j.conclusion == "failure" for j in stepped)


def test_concurrency_cancels_stay_cancelled_and_not_red(history: History) -> None:
    cancelled = [a for r in history.runs for a in r.attempts if a.superseded]
    assert cancelled
    for attempt in cancelled:
        limits = [j for j in attempt.jobs if j.cause == "job_time_limit"]
        assert attempt.conclusion == "cancelled" and attempt.red == bool(limits)
        stopped = [j for j in attempt.jobs if j.conclusion == "cancelled" and j not in limits]
        assert stopped and all(j.category is None for j in stopped)


def test_trtllm_stops_at_the_migration(history: History) -> None:
    runs = [r for r in history.runs if r.workflow.name == "e2e_fully_async_policy_trtllm"]
    assert runs and max(r.created_at for r in runs) < MIGRATION
    assert min(r.created_at for r in runs) >= parse_time("2026-05-07T07:31:52Z")
    v1 = [r for r in history.runs if r.workflow.name.startswith("e2e_v1_separate_async")]
    assert v1 and min(r.created_at for r in v1) >= MIGRATION


def _weekly_oom(history: History, lo: datetime, hi: datetime) -> float:
    jobs = [
        j
        for j in history.job_by_id.values()
        if j.spec.id == "e2e_fully_async_policy_fsdp2" and lo <= j.created_at < hi
    ]
    weeks = (hi - lo) / timedelta(weeks=1)
    return sum(j.category == "oom" for j in jobs) / weeks


def test_fully_async_oom_falls_after_the_fix(history: History) -> None:
    before = _weekly_oom(history, parse_time("2026-02-06T11:00:00Z"), parse_time("2026-06-03"))
    after = _weekly_oom(history, FIX, MIGRATION)
    assert before > 4 * after, (before, after)
    assert before >= 1.0


def test_npu_env_failures_rise_after_cann_upgrades(history: History) -> None:
    def share(lo: datetime, hi: datetime) -> float:
        jobs = [
            j
            for j in history.job_by_id.values()
            if j.spec.kind == "npu_test" and j.ran and lo <= j.created_at < hi
        ]
        return sum(j.category == "npu_env" for j in jobs) / max(len(jobs), 1)

    upgrade = parse_time("2026-06-01T02:10:00Z")
    assert share(upgrade, upgrade + timedelta(days=5)) > 2 * share(
        parse_time("2026-06-20"), parse_time("2026-07-10")
    )


def test_v1_teething_failures(history: History) -> None:
    jobs = [j for j in history.job_by_id.values() if "v1" in j.spec.tags and j.ran]
    early = [j for j in jobs if j.created_at < MIGRATION + timedelta(days=3)]
    late = [j for j in jobs if j.created_at > MIGRATION + timedelta(days=30)]
    rate = lambda js: sum(j.category is not None for j in js) / len(js)  # noqa: E731
    assert rate(early) > 2 * rate(late)


def test_reruns_keep_created_at_and_runner_pools(history: History) -> None:
    rerun = [r for r in history.runs if len(r.attempts) > 1]
    assert rerun and max(len(r.attempts) for r in rerun) <= 3
    for run in rerun:
        assert run.attempts[1].created_at > run.created_at
        assert {j.attempt for j in run.attempts[-1].jobs} <= {len(run.attempts)}
    labels = Counter(j.runner_label for j in history.job_by_id.values())
    for label in (
        "ubuntu-latest",
        "L20x8",
        "linux-aarch64-a2-8",
        "linux-aarch64-a2b3-8",
        "linux-aarch64-a3-8",
    ):
        assert labels[label] > 0, label


def test_every_category_and_truth_line(history: History) -> None:
    failed = [j for j in history.job_by_id.values() if j.category]
    assert {j.category for j in failed} >= set(load().base_rates["npu_test"]) | {"ci_config"}
    assert {j.category for j in failed} <= set(CATEGORIES)
    for job in failed[::25]:
        rendered = render(job, history.run_by_id[job.run_id], "verl-project/verl")
        lines = rendered.text.encode().decode("utf-8-sig").splitlines()
        assert rendered.line_number is not None
        assert lines[rendered.line_number - 1] == rendered.line
        assert "Process completed with exit code" not in (rendered.line or "")


def test_annotations_are_the_logs_notes_without_writing_the_log(history: History, monkeypatch):
    """The annotations route makes a job's notes without stamping and joining its log's lines
    (most of the route's cost): the same notes as its rendered log's, drawn alike."""
    repo = "verl-project/verl"
    jobs = [j for j in history.job_by_id.values() if j.ran][::7]
    expected = [
        job_notes(
            job,
            history.run_by_id[job.run_id],
            repo,
            render(job, history.run_by_id[job.run_id], repo),
        )
        for job in jobs
    ]

    def no_stamp(*args: object) -> str:
        raise AssertionError("a log line was stamped")

    monkeypatch.setattr(logs, "stamp", no_stamp)
    assert [job_notes(job, history.run_by_id[job.run_id], repo) for job in jobs] == expected
    assert sum(map(len, expected)) > 100


@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)))
def test_iso_is_githubs_format(at: datetime) -> None:
    assert iso(at) == at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert iso(None) is None


def test_a_failure_without_a_cause_beyond_its_log_draws_nothing(monkeypatch) -> None:
    """Every jobs payload asks each job's cause: only a timeout or an infra failure has one to
    draw, and seeding a generator for the others cost more than the rest of their steps."""
    drawn = [failure_cause(seed, "gpu_test", "timeout") for seed in range(200)]
    assert {"job_time_limit", "step_time_limit", "inner_timeout"} == set(drawn)

    def no_draw(seed: int) -> None:
        raise AssertionError("a generator was seeded")

    monkeypatch.setattr(failures, "Random", no_draw)
    for category in (None, *(c for c in CATEGORIES if c not in ("timeout", "infra"))):
        assert failure_cause(7, "gpu_test", category) is None


def test_a_timelines_dates_are_parsed_once(monkeypatch) -> None:
    """Every job looks its limit and runner label up in a timeline of its data file: each date
    is parsed once, not at every look-up."""
    parsed: list[str | None] = []
    parse = catalog.parse_time

    def counted(text: str | None, default: datetime = catalog.FAR_PAST) -> datetime:
        parsed.append(text)
        return parse(text, default)

    monkeypatch.setattr(catalog, "parse_time", counted)
    catalog._since.cache_clear()
    pairs = [["2025-01-01", 20], ["2026-08-17T06:10:00Z", 60]]
    at = parse_time("2026-09-01T00:00:00Z")
    assert [catalog.dated(pairs, at) for _ in range(5)] == [60] * 5
    assert parsed == ["2025-01-01", "2026-08-17T06:10:00Z"]
