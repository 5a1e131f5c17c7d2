"""Time limits from the workflow file (#35): a job cancelled at its `timeout-minutes`, or a step
failed at its own, is a timeout even when no annotation can say so."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

import fakehub
from collector.time_limits import parse, reached
from fakehub import steps
from fakehub.api import RepoApi
from fakehub.workflow_files import TEST_KINDS, render
from store.models import Failure, WorkflowFile, WorkflowTriggers
from tests.support.hubtools import collect_without_waits, migrated

CHANGED = datetime(2026, 8, 17, 6, 10, tzinfo=UTC)  # v1_separate_async: 20 -> 60 minutes


@pytest.fixture(scope="module")
def verl() -> Iterator[RepoApi]:
    """verl's simulated history at scale 1 (seed 1), in process: no collect needed to read a
    job and its workflow file as GitHub serves them."""
    hub = fakehub.Hub(seed=1, scale=1.0)
    yield next(iter(hub.app.repos.values()))


def _file(api: RepoApi, run) -> dict:
    """The limits of the run's workflow file at its commit, as the collector parses them."""
    workflow = run.workflow
    named = {s.id: steps.test_step_name(s) for s in workflow.jobs if s.kind in TEST_KINDS}
    return _parsed(render(workflow, run.created_at, named))


@functools.cache
def _parsed(text: str) -> dict:
    return parse(text)


def _how(api: RepoApi, job) -> str | None:
    """What the collector finds of ``job``'s time limit, from its payload and its file."""
    run = api.history.run_by_id[job.run_id]
    return reached(api.shapes.job(job, run), _file(api, run))


def _limited(api: RepoApi, cause: str) -> list:
    return [
        j
        for j in api.history.job_by_id.values()
        if j.cause == cause and j.category == "timeout" and j.ran
    ]


def test_a_job_cancelled_at_its_limit_ran_it(verl):
    jobs = _limited(verl, "job_time_limit")
    assert len(jobs) > 5
    for job in jobs:
        how = _how(verl, job)
        assert (
            how is not None
            and how.startswith("ran ")
            and how.endswith(f" of its {job.limit_minutes} minutes")
        ), how


def test_a_step_failed_at_its_own_limit_ran_it(verl):
    jobs = _limited(verl, "step_time_limit")
    assert len(jobs) > 5
    for job in jobs:
        how = _how(verl, job)
        assert how is not None and how.startswith(
            f'step "{steps.test_step_name(job.spec)}" ran '
        ), how


def test_no_other_job_reached_a_limit(verl):
    """Every cancelled or failed job that did not hit a limit: no false timeout."""
    limited = {"job_time_limit", "step_time_limit"}
    others = [
        j
        for j in verl.history.job_by_id.values()
        if j.ran and j.conclusion in ("cancelled", "failure") and j.cause not in limited
    ]
    assert len(others) > 100
    for job in others:
        assert _how(verl, job) is None, job


def test_the_limit_is_read_from_the_version_at_the_runs_commit(verl):
    """v1_separate_async's limit went from 20 to 60 minutes: a job cancelled at 60 after the
    change reached it by the file at its commit, and would not have by a file older than the
    change, which would have stopped it at 20."""
    job = next(
        j
        for j in _limited(verl, "job_time_limit")
        if j.spec.id == "e2e_v1_separate_async_fsdp2" and j.created_at > CHANGED
    )
    run = verl.history.run_by_id[job.run_id]
    payload = verl.shapes.job(job, run)
    assert reached(payload, _file(verl, run)) is not None
    old = parse(render(run.workflow, datetime(2026, 8, 1, tzinfo=UTC), {}))
    assert old["jobs"][job.spec.name]["limit"] == 20
    longer = {**payload, "conclusion": "cancelled"}
    assert reached(longer, old) is not None  # by the old file it ran past 20: a different fact
    assert reached(longer, _file(verl, run)) != reached(longer, old)


def test_with_checks_refused_every_time_limit_job_is_a_timeout_from_job_facts(tmp_path):
    """A token without `checks: read`: no annotation says which cancelled job hit its limit.
    Every one the simulation served is a `timeout` with evidence `job`, and each workflow file
    is read once per commit (the contents API's other reads: per repository, SILENT's one
    `.github/workflows` listing and each tracked file there, collector.triggers). About 20 s:
    a collect at scale 0.1 that no other test shares."""
    url = f"sqlite:///{tmp_path / 'nochecks.db'}"
    with fakehub.running(seed=1, scale=0.1, rate_limit=100_000) as hub:
        hub.admin("POST", "permissions", {"checks": False})
        report = collect_without_waits(hub, url)
        truth = hub.admin("GET", "truth")["failures"]
        contents = hub.admin("GET", "counters")["by_route"].get("contents", 0)
    assert "checks: read" in report.line()
    limited = [f for f in truth if f["cause"] in ("job_time_limit", "step_time_limit")]
    assert {f["cause"] for f in limited} == {"job_time_limit", "step_time_limit"}
    with Session(migrated(url)) as session:
        stored = {row.job_id: row for row in session.scalars(select(Failure))}
        files = session.scalars(select(WorkflowFile)).all()
        triggers = session.scalars(select(WorkflowTriggers)).all()
    for fact in limited:
        row = stored[fact["job_id"]]
        assert (row.category, row.evidence) == ("timeout", "job"), (fact, row.line)
    listings = len({t.repo for t in triggers})
    at_head = sum(t.file_present for t in triggers)
    assert listings == 1 and at_head > 0
    assert contents == len(files) + listings + at_head
    assert len({(f.path, f.sha) for f in files}) == len(files)
