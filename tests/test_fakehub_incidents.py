"""fakehub's ground truth for #48: its incidents fail every job they hit with one message the
classifier puts in the incident's category, and its silent workflows (a cron GitHub stops firing,
a workflow disabled for inactivity, a file deleted without an event) show as GitHub shows them:
the workflows API's `state`, the `.github/workflows` listing and each file's `on:`."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

import fakehub
import fakehub.history
from collector.classify import classify_log
from fakehub.api import RepoApi
from fakehub.catalog import IncidentSpec, load, parse_time
from fakehub.history import DEFAULT_END, History
from fakehub.logs import render
from fakehub.records import Job, Run
from fakehub.web import Request
from fakehub.workflow_files import render as render_file

VERL = "verl-project/verl"
RECIPE = "verl-project/verl-recipe"
NIGHTLY = ".github/workflows/e2e_v1_separate_async_nightly.yml"  # verl: its cron stops firing
DISABLED = ".github/workflows/recipe_dapo_nightly.yml"  # disabled for inactivity on 2026-10-21
DELETED = ".github/workflows/recipe_dapo_npu_weekly.yml"  # deleted on 2026-11-04, no event


@pytest.fixture(scope="module")
def verl() -> History:
    return History(1, 1.0, DEFAULT_END)  # verl's volume: every incident hits several jobs


@pytest.fixture(scope="module")
def recipe() -> RepoApi:
    """verl-recipe served in process (a small history: no collect, no server thread)."""
    hub = fakehub.Hub(seed=1, scale=1.0, repos=(RECIPE,))
    return next(iter(hub.app.repos.values()))


def _get(api: RepoApi, rest: str, **query: str) -> tuple[int, Any]:
    request = Request("GET", rest, list(query.items()), {}, b"", {})
    response = api.dispatch(request, rest)[1]
    return response.status, response.payload


def _jobs(history: History) -> Iterator[tuple[Run, Job]]:
    for run in history.runs:
        for attempt in run.attempts:
            for job in attempt.jobs:
                yield run, job


def _exposed(incident: IncidentSpec, run: Run, job: Job) -> bool:
    """A job that ran in the incident's span and scope (on any host of its pool)."""
    started = job.started_at
    return started is not None and incident.scope(run.workflow, job.spec, job.runner_label, started)


# ---- incidents ---------------------------------------------------------------------------------


def test_every_job_an_incident_hits_fails_with_its_message_in_its_category(verl: History) -> None:
    incidents = load(VERL).incidents
    assert [i.kind for i in incidents] == ["host", "hub", "image"]
    jobs = list(_jobs(verl))
    for incident in incidents:
        hit = [(run, job) for run, job in jobs if job.incident is incident]
        assert len(hit) >= 3, incident.label
        signatures = set()
        for run, job in hit:
            assert _exposed(incident, run, job)
            assert (job.conclusion, job.category) == ("failure", incident.category)
            log = render(job, run, VERL)
            assert log.line is not None and log.line.endswith(" " + incident.message)
            found = classify_log(log.text.encode())
            assert found.category == incident.category, (incident.label, found)
            signatures.add(found.signature)
        assert len(signatures) == 1, incident.label  # one cause, one signature
        assert all(run.latest.conclusion == "failure" for run, _ in hit if len(run.attempts) == 1)


def test_a_host_incident_fails_only_the_jobs_sent_to_its_host(verl: History) -> None:
    host = next(i for i in load(VERL).incidents if i.kind == "host")
    exposed = [(run, job) for run, job in _jobs(verl) if _exposed(host, run, job)]
    stuck = [job for _, job in exposed if job.runner_name == host.runner_name]
    assert stuck and all(job.incident is host and job.conclusion == "failure" for job in stuck)
    others = [job for _, job in exposed if job.runner_name != host.runner_name]
    assert 0.3 < len(stuck) / len(exposed) < 0.8  # about half of the pool's jobs
    assert not any(job.incident for job in others)
    assert sum(job.conclusion == "success" for job in others) > len(others) / 2
    # the host exists only for its incident
    named = [job for _, job in _jobs(verl) if job.runner_name == host.runner_name]
    assert all(host.start <= job.started_at < host.end for job in named)  # type: ignore[operator]


def test_a_job_that_needs_a_failed_one_is_skipped(verl: History) -> None:
    hub = next(i for i in load(VERL).incidents if i.kind == "hub")
    needing = [
        (attempt, job)
        for run in verl.runs
        for attempt in run.attempts
        for job in attempt.jobs
        if any(j.incident is hub and "fsdp2" in j.spec.tags for j in attempt.jobs)
        and "megatron" in job.spec.tags
        and run.created_at >= job.spec.needs_from
    ]
    assert needing
    assert all(job.conclusion == "skipped" and job.runner_name is None for _, job in needing)


def test_no_job_fails_by_an_incident_outside_its_span(verl: History) -> None:
    for _, job in _jobs(verl):
        if job.incident is None:
            assert job.runner_name is None or "stuck" not in job.runner_name
        else:
            assert job.incident.start <= job.started_at < job.incident.end  # type: ignore[operator]


# ---- scheduled runs ---------------------------------------------------------------------------


def test_a_cron_fires_daily_in_its_timezone_until_github_stops_it(verl: History) -> None:
    nightly = next(w for w in verl.workflows if w.path == NIGHTLY)
    runs = verl.by_workflow[nightly.id]
    assert {(r.event, r.branch) for r in runs} == {("schedule", "main")}
    # 0 2 * * * in Asia/Shanghai: 18:00 UTC the day before, queued late by GitHub
    slots = []
    for run in runs:
        slot = run.created_at.replace(hour=18, minute=0, second=0, microsecond=0)
        slots.append(slot - timedelta(days=1) if slot > run.created_at else slot)
        assert run.created_at - slots[-1] < timedelta(hours=8)
    days = {s.date() for s in slots}
    first, last = min(days), max(days)
    assert len(days) == len(runs) == (last - first).days + 1  # one run a day, none missed
    assert first == datetime(2026, 8, 12, tzinfo=UTC).date()
    assert last == datetime(2026, 11, 9, tzinfo=UTC).date()  # nothing from 2026-11-10 on
    pushes = {r.sha for r in verl.runs if r.event == "push"}
    assert {r.sha for r in runs} <= pushes  # the default branch's latest commit


def test_a_disabled_or_deleted_workflow_gets_no_run(recipe: RepoApi) -> None:
    history = recipe.history
    disabled, deleted = (
        next(w for w in history.workflows if w.path == p) for p in (DISABLED, DELETED)
    )
    for workflow, silent_from in ((disabled, "2026-10-21"), (deleted, "2026-11-04T07:30:00Z")):
        runs = history.by_workflow[workflow.id]
        assert len(runs) > 20 and {r.event for r in runs} == {"schedule"}
        assert max(r.created_at for r in runs) < parse_time(silent_from)
        assert max(r.created_at for r in runs) > parse_time(silent_from) - timedelta(days=8)
    assert {r.created_at.weekday() for r in history.by_workflow[deleted.id]} == {0}  # Mondays


def test_a_disabled_workflow_also_stops_its_push_and_pull_request_runs() -> None:
    catalog = load(RECIPE)
    off = parse_time("2026-09-01")
    workflows = tuple(
        dataclasses.replace(w, states=((w.present[0][0], "active"), (off, "disabled_manually")))
        if w.name == "recipe_dapo"
        else w
        for w in catalog.workflows
    )
    history = History(1, 1.0, DEFAULT_END, dataclasses.replace(catalog, workflows=workflows))
    runs = history.by_workflow[198340002]
    assert {r.event for r in runs} == {"push", "pull_request"}
    assert any(r.created_at > off - timedelta(days=7) for r in runs)
    assert all(r.created_at < off for r in runs)


# ---- the workflows API and the contents API ---------------------------------------------------


def test_the_workflows_api_gives_each_state_as_simulated_at_a_time(recipe: RepoApi) -> None:
    status, body = _get(recipe, "/actions/workflows")
    assert status == 200
    states = {w["path"]: w["state"] for w in body["workflows"]}
    assert states[DISABLED] == "disabled_inactivity"
    assert states[DELETED] == "active"  # GitHub keeps a deleted workflow's record active
    assert set(states.values()) == {"active", "disabled_inactivity"}
    disabled = next(w for w in recipe.history.workflows if w.path == DISABLED)
    assert _get(recipe, f"/actions/workflows/{disabled.id}")[1]["state"] == "disabled_inactivity"
    before = recipe.shapes.workflow(disabled, parse_time("2026-10-20T23:00:00Z"))
    after = recipe.shapes.workflow(disabled, parse_time("2026-10-21T00:00:00Z"))
    assert (before["state"], after["state"]) == ("active", "disabled_inactivity")
    assert after["updated_at"] == "2026-10-21T00:00:00Z"


def test_the_contents_api_lists_the_default_branchs_workflow_files(recipe: RepoApi) -> None:
    status, listing = _get(recipe, "/contents/.github/workflows", ref="main")
    assert status == 200
    names = [entry["name"] for entry in listing]
    # e2e_dapo.yml renamed by #412, recipe_dapo_npu_weekly.yml deleted: neither is listed
    assert names == ["recipe_dapo.yml", "recipe_dapo_nightly.yml", "recipe_dapo_npu.yml"]
    assert all(
        e["type"] == "file" and e["path"] == f".github/workflows/{e['name']}" for e in listing
    )
    assert _get(recipe, "/contents/.github/workflows")[1] == listing  # ref: the default branch
    for entry in listing:
        status, file = _get(recipe, f"/contents/{entry['path']}", ref="main")
        assert status == 200 and (file["sha"], file["size"]) == (entry["sha"], entry["size"])
    assert _get(recipe, f"/contents/{DELETED}", ref="main")[0] == 404
    old = next(r.sha for r in recipe.history.runs if r.created_at < parse_time("2026-11-01"))
    status, then = _get(recipe, "/contents/.github/workflows", ref=old)
    assert DELETED in {e["path"] for e in then} and status == 200


def test_each_file_has_its_real_on_with_its_schedule(recipe: RepoApi) -> None:
    old = next(r.sha for r in recipe.history.runs if r.created_at < parse_time("2026-11-01"))
    status, file = _get(recipe, f"/contents/{DELETED}", ref=old)
    assert status == 200
    on = yaml.safe_load(_decoded(file))[True]  # YAML 1.1 reads the key `on` as True
    assert on == {"schedule": [{"cron": "0 3 * * 1"}], "workflow_dispatch": None}
    pushed = yaml.safe_load(
        _decoded(_get(recipe, "/contents/.github/workflows/recipe_dapo.yml")[1])
    )
    assert pushed[True] == ["push", "pull_request"]
    nightly = next(w for w in load(VERL).workflows if w.path == NIGHTLY)
    on = yaml.safe_load(render_file(nightly, DEFAULT_END, {}))[True]
    assert on["schedule"] == [{"cron": "0 2 * * *", "timezone": "Asia/Shanghai"}]


def _decoded(file: dict[str, Any]) -> str:
    return base64.b64decode(file["content"]).decode()


# ---- the demo's "now" -------------------------------------------------------------------------


def test_the_simulation_runs_up_to_the_current_hour(monkeypatch: pytest.MonkeyPatch) -> None:
    class Late(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Late:  # 22:37 UTC: a demo started late in the day
            return cls(2026, 12, 4, 22, 37, 12, tzinfo=UTC)

    monkeypatch.setattr(fakehub.history, "datetime", Late)
    assert fakehub.history.today() == datetime(2026, 12, 4, 22, tzinfo=UTC)
