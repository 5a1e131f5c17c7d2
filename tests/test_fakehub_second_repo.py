"""fakehub's second repository, verl-project/verl-recipe: served as verl is, through PyGithub's
own HTTP stack, with ids of its own, an event that changes its failure rate, and verl's history
left exactly as it was."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from github import Auth, Github, UnknownObjectException

import fakehub
from fakehub.catalog import UnknownRepository, load, parse_time
from fakehub.child import SERVING, spawned
from fakehub.history import DEFAULT_END, History
from store.vocabulary import EVENT_KINDS

TOKEN = "test-token"
VERL, RECIPE = "verl-project/verl", "verl-project/verl-recipe"
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "ciflake" / "demo.toml"  # the demo's config, an example of two repositories
# The last commit before fakehub had a second repository: verl's history must be what that
# commit's fakehub generates. A pinned commit, not a pinned number: the digest below is
# computed from that commit's code each time. (Skipped where the commit is not in the clone.)
BEFORE_SECOND_REPO = "6b846b1dad683b3526550edabd4094277f21c489"


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=5, scale=0.25, token=TOKEN) as hub:
        yield hub


@pytest.fixture
def gh(hub: fakehub.Hub) -> Github:
    return Github(
        auth=Auth.Token(TOKEN),
        base_url=hub.base_url,
        per_page=100,
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def test_both_repositories_are_served_by_default(hub: fakehub.Hub) -> None:
    assert hub.repos == [VERL, RECIPE]
    assert 0 < len(hub.history(RECIPE).runs) < len(hub.history(VERL).runs) / 10


def test_runs_attempts_jobs_logs_and_files_through_pygithub(gh: Github, hub: fakehub.Hub) -> None:
    repo = gh.get_repo(RECIPE)
    assert (repo.full_name, repo.id) == (RECIPE, load(RECIPE).repository["id"])
    assert repo.id != gh.get_repo(VERL).id
    inventory = hub.admin("GET", "inventory", repo=RECIPE)
    workflows = {w.path: w for w in repo.get_workflows()}
    assert set(workflows) == {w.path for w in load(RECIPE).workflows}
    for path, workflow in workflows.items():
        by_file = repo.get_workflow(path.rsplit("/", 1)[1])
        assert by_file.id == workflow.id
        assert by_file.get_runs().totalCount == inventory["by_workflow"][path]["runs"]
    listed = list(repo.get_workflow_runs())
    assert {r.id for r in listed} == set(inventory["run_ids"])

    history = hub.history(RECIPE)
    run_id = next(r.id for r in history.runs if len(r.attempts) > 1 and r.latest.jobs)
    run = repo.get_workflow_run(run_id)
    jobs = list(run.jobs("all"))
    assert len(jobs) == sum(len(a.jobs) for a in history.run_by_id[run_id].attempts)
    assert run.get_attempt(1).run_attempt == 1
    assert {j.name for j in jobs} <= {s.name for w in load(RECIPE).workflows for s in w.jobs}

    truth = hub.admin("GET", "truth", repo=RECIPE)
    failure = next(f for f in truth["failures"] if f["log_status"] == "ok" and f["annotations"])
    job = repo.get_workflow_job(failure["job_id"])
    text = requests.get(job.logs_url(), timeout=10).content.decode("utf-8-sig")
    lines = text.splitlines()
    assert lines[failure["line_number"] - 1] == failure["line"]
    assert "Working directory is '/home/runner/work/verl-recipe/verl-recipe'" in text
    notes = [a.message for a in repo.get_check_run(job.id).get_annotations()]
    assert notes == failure["annotations"]

    failed_run = repo.get_workflow_run(failure["run_id"])
    file = repo.get_contents(failed_run.path, ref=failed_run.head_sha)
    assert not isinstance(file, list)
    assert f"name: {failed_run.name}" in file.decoded_content.decode()
    assert gh.get_rate_limit().rate.limit == 5000


def test_ids_are_its_own(gh: Github, hub: fakehub.Hub) -> None:
    verl, recipe = hub.history(VERL), hub.history(RECIPE)
    assert not set(verl.run_by_id) & set(recipe.run_by_id)
    assert not set(verl.job_by_id) & set(recipe.job_by_id)  # a job's id is its check run's
    assert not {w.id for w in verl.workflows} & {w.id for w in recipe.workflows}
    mine, theirs = gh.get_repo(RECIPE).get_issue(412), gh.get_repo(VERL).get_issue(412)
    assert mine.id != theirs.id and mine.node_id != theirs.node_id
    first = mine.create_comment("recipe").id
    assert gh.get_repo(VERL).get_issue(7357).create_comment("verl").id == first + 1


def test_ids_stay_apart_at_scale_one() -> None:
    verl = History(1, 1.0, DEFAULT_END)
    recipe = History(1, 1.0, DEFAULT_END, load(RECIPE))
    assert max(verl.run_by_id) < min(recipe.run_by_id)
    assert max(verl.job_by_id) < min(recipe.job_by_id)
    assert 300 < len(recipe.runs) < len(verl.runs) / 10


def test_unknown_repositories_answer_404(gh: Github, hub: fakehub.Hub) -> None:
    with pytest.raises(UnknownObjectException):
        gh.get_repo("verl-project/verl-recipes")
    headers = {"Authorization": f"token {TOKEN}"}
    for path in ("/repos/nobody/nothing", "/repos/nobody/nothing/actions/runs"):
        answer = requests.get(hub.base_url + path, headers=headers, timeout=10)
        assert answer.status_code == 404 and answer.json()["message"] == "Not Found"
    mixed_case = requests.get(
        f"{hub.base_url}/repos/Verl-Project/Verl-Recipe", headers=headers, timeout=10
    )
    assert mixed_case.json()["full_name"] == RECIPE  # GitHub's names are case-insensitive
    with pytest.raises(UnknownRepository):
        fakehub.Hub(repos=(VERL, "nobody/nothing"))


def test_its_event_changes_its_failure_rate() -> None:
    catalog = load(RECIPE)
    (event,) = catalog.events
    assert (event["pr"], event["kind"]) == (412, "migration")
    assert event["pr"] not in {e["pr"] for e in load(VERL).events}
    at = parse_time(event["at"])
    history = History(1, 1.0, DEFAULT_END, catalog)
    # the GPU workflows pushes and pull requests run (the scheduled one is a lineage of its own)
    gpu = [r for r in history.runs if r.workflow.accelerator == "gpu" and r.event != "schedule"]
    before = [r for r in gpu if r.created_at < at]
    after = [r for r in gpu if r.created_at >= at + timedelta(days=3)]  # past its teething days

    def red(runs: list[Any]) -> float:
        return sum(r.attempts[0].red for r in runs) / len(runs)

    assert {r.workflow.name for r in before} == {"e2e_dapo"}
    assert {r.workflow.name for r in after} == {"recipe_dapo"}
    assert red(before) > 2 * red(after), (red(before), red(after))


def test_the_example_config_is_what_fakehub_simulates() -> None:
    config = tomllib.loads(EXAMPLE.read_text())
    verl, recipe = config["repositories"]
    assert verl["repo"] == VERL and "workflows" not in verl  # verl's built-in ones
    catalog = load(recipe["repo"])
    simulated = {w.path: w for w in catalog.workflows}
    assert {w["path"] for w in recipe["workflows"]} == set(simulated)
    for workflow in recipe["workflows"]:
        assert workflow["accelerator"] == simulated[workflow["path"]].accelerator
    lineages = {entry["name"]: entry.get("job_renames", {}) for entry in recipe["lineages"]}
    assert {w["lineage"] for w in recipe["workflows"]} == set(lineages)
    old, new = (simulated[f".github/workflows/{f}.yml"] for f in ("e2e_dapo", "recipe_dapo"))
    ((stem, successor),) = lineages["recipe_dapo"].items()
    for spec in old.jobs:  # each e2e_dapo.yml job has its successor in recipe_dapo.yml
        name = successor + spec.name[len(stem) :] if spec.name.startswith(stem) else spec.name
        assert name in {s.name for s in new.jobs}
    (event,) = recipe["events"]
    (simulated_event,) = catalog.events
    assert parse_time(event["date"]) == parse_time(simulated_event["at"])
    assert [event[k] for k in ("pr", "kind", "title")] == [
        simulated_event[k] for k in ("pr", "kind", "title")
    ]
    assert event["kind"] in EVENT_KINDS and recipe["summary_pr"] == event["pr"]
    assert set(event["lineages"]) <= set(lineages)


def test_the_command_line_serves_the_repositories_asked_for() -> None:
    assert SERVING.match(f"fakehub serving {VERL}, {RECIPE} at http://127.0.0.1:1\n")
    with spawned(seed=1, scale=0.05, end=DEFAULT_END, repos=(RECIPE,)) as child:
        headers = {"Authorization": f"token {child.token}"}
        for repo, status in ((RECIPE, 200), (VERL, 404)):
            answer = requests.get(f"{child.base_url}/repos/{repo}/actions/runs", headers=headers)
            assert answer.status_code == status, repo


# ---- verl's history, byte for byte -------------------------------------------------------------

# A digest of verl's simulated history as a client sees it: every run and attempt payload,
# every job payload (steps included), and the log and annotations of every failed job and of
# about one in twenty others, but for the runs whose ids are in the JSON list argv[3] (the runs
# that later features add or change on purpose). It uses only what fakehub had before the second
# repository, so that it runs on that commit's code too.
DIGEST = """
import hashlib, json, sys
from fakehub.annotations import job_notes
from fakehub.history import DEFAULT_END, History
from fakehub.logs import render
from fakehub.payloads import Shapes

history = History(int(sys.argv[1]), float(sys.argv[2]), DEFAULT_END)
shapes = Shapes("http://api.invalid", "verl-project", "verl", 847046412,
                "2024-10-31T06:30:00Z", "http://web.invalid")
sha = hashlib.sha256()
add = lambda value: sha.update(json.dumps(value, sort_keys=True).encode())
add([shapes.repository(full=True), shapes.issue(7357, 0, "2026-11-28T00:00:00Z")])
skip = set(json.loads(sys.argv[3]))
runs = [run for run in history.runs if run.id not in skip]
for run in runs:
    for attempt in run.attempts:
        add(shapes.run(run, attempt))
        for job in attempt.jobs:
            add([shapes.job(job, run), job.category, job.cause, job.seed])
            if job.ran and job.status == "completed" and (job.category or job.id % 20 == 0):
                add(render(job, run, "verl-project/verl").text)
                add([[n.level, n.message] for n in job_notes(job, run, "verl-project/verl")])
print(json.dumps({"runs": len(runs), "sha256": sha.hexdigest()}))
"""


def _digest(
    code: Path, cwd: Path, seed: int, scale: float, skip: list[int]
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, "-c", DIGEST, str(seed), str(scale), json.dumps(skip)]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)


def _old_fakehub(into: Path) -> Path:
    """fakehub as it was at BEFORE_SECOND_REPO, extracted into ``into``."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", BEFORE_SECOND_REPO, "fakehub"],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {BEFORE_SECOND_REPO[:7]} is not in this clone")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def test_verl_history_is_what_it_was_before_the_second_repository(tmp_path: Path) -> None:
    """Byte for byte, but for what #48 adds on purpose: the scheduled runs (new runs, after all
    the others, from a stream of their own) and the runs an incident fails a job of."""
    old = _old_fakehub(tmp_path / "before")
    history = History(3, 0.05, DEFAULT_END)
    scheduled = [r.id for r in history.runs if r.event == "schedule"]
    hit = [r.id for r in history.runs if any(j.incident for a in r.attempts for j in a.jobs)]
    assert scheduled and hit and min(scheduled) > max(set(history.run_by_id) - set(scheduled))
    digests = [
        _digest(old, tmp_path, 3, 0.05, hit),
        _digest(ROOT, tmp_path, 3, 0.05, hit + scheduled),
    ]
    before, after = (json.loads(p.communicate(timeout=120)[0]) for p in digests)
    assert before == after
    assert before["runs"] > 500


def test_verl_history_is_the_same_with_or_without_the_recipes(hub: fakehub.Hub) -> None:
    served = hub.history(VERL)
    alone = History(5, 0.25, DEFAULT_END)
    assert [(r.id, r.sha, r.created_at, len(r.attempts)) for r in served.runs] == [
        (r.id, r.sha, r.created_at, len(r.attempts)) for r in alone.runs
    ]
    assert [(j.id, j.category, j.seed) for j in served.job_by_id.values()] == [
        (j.id, j.category, j.seed) for j in alone.job_by_id.values()
    ]
