"""examples/nightly-summary.yml runs ciflake's composite action (action.yml), which installs
ciflake from its own checkout, keeps the database across nights and collects within a budget."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "nightly-summary.yml"
ACTION = ROOT / "action.yml"
GUARD_PASSED = "steps.guard.outcome == 'success'"


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _example_step() -> dict:
    (job,) = _load(WORKFLOW)["jobs"].values()
    (step,) = [s for s in job["steps"] if "/ciflake@" in str(s.get("uses", ""))]
    return step


def _action_steps() -> list[dict]:
    return _load(ACTION)["runs"]["steps"]


def _index(name_part: str) -> int:
    return next(i for i, s in enumerate(_action_steps()) if name_part in str(s.get("name", "")))


def _uses(prefix: str) -> int:
    return next(i for i, s in enumerate(_action_steps()) if s.get("uses", "").startswith(prefix))


def test_the_example_uses_the_action_at_the_checkouts_release_tag() -> None:
    """No `pip install ciflake` (no such distribution on the package index): the example runs
    this repository's action at the tag of the version the checkout builds."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _example_step()["uses"] == f"<owner>/ciflake@v{version}"
    for path in (WORKFLOW, ACTION):
        assert "pip install ciflake" not in path.read_text()


def test_the_example_passes_only_inputs_the_action_declares() -> None:
    inputs = _load(ACTION)["inputs"]
    assert set(_example_step()["with"]) <= set(inputs)
    assert {"max-requests", "reserve", "config", "pr", "token"} <= set(inputs)


def test_the_action_installs_with_the_script_the_install_test_runs() -> None:
    (install,) = [s for s in _action_steps() if "install.sh" in str(s.get("run", ""))]
    assert '"$GITHUB_ACTION_PATH/action/install.sh"' in install["run"]
    assert _action_steps().index(install) < _index("Collect")


def test_the_database_is_saved_even_when_the_night_is_cut_off() -> None:
    steps = _action_steps()
    restore, save = _uses("actions/cache/restore"), _uses("actions/cache/save")
    assert restore < _index("Count the stored runs") < _index("Collect") < save
    assert steps[save].get("if") == f"always() && {GUARD_PASSED}"
    assert steps[save]["with"]["path"] == steps[restore]["with"]["path"]
    assert steps[save]["with"]["key"] == steps[restore]["with"]["key"]


def test_the_cleanup_is_the_tested_script_fed_by_the_restore_and_the_save() -> None:
    """keep-one-cache.sh (tests/test_action_cache.py) runs after every save, told tonight's
    key, the key the restore matched (empty when none) and this run's ref."""
    steps = _action_steps()
    keep = steps[_index("Keep one database cache entry")]
    assert keep["run"] == 'bash "$GITHUB_ACTION_PATH/action/keep-one-cache.sh"'
    assert keep["if"] == f"always() && {GUARD_PASSED}"
    assert _uses("actions/cache/save") < _index("Keep one")
    restore = steps[_uses("actions/cache/restore")]
    assert keep["env"]["KEEP"] == steps[_uses("actions/cache/save")]["with"]["key"]
    assert keep["env"]["RESTORED"] == f"${{{{ steps.{restore['id']}.outputs.cache-matched-key }}}}"
    assert keep["env"]["REF"] == "${{ github.ref }}"


def test_the_run_summary_says_how_many_runs_before_and_after() -> None:
    steps = _action_steps()
    before = steps[_index("Count the stored runs")]
    after = steps[_index("Say how many runs")]
    assert "action/runs.sh" in before["run"] and "action/runs.sh" in after["run"]
    assert after["env"]["BEFORE"] == f"${{{{ steps.{before['id']}.outputs.runs }}}}"
    assert "GITHUB_STEP_SUMMARY" in after["run"]
    assert after["if"] == f"${{{{ !cancelled() && {GUARD_PASSED} }}}}"
    assert _index("Keep one") < _index("Say how many runs") < _index("Post the summary")


def _default(name: str) -> str:
    return str(_load(ACTION)["inputs"][name]["default"])


def test_the_collect_has_a_request_budget_under_a_workflow_tokens_hour() -> None:
    collect = _action_steps()[_index("Collect")]
    assert '--max-requests "$MAX_REQUESTS"' in collect["run"]
    assert collect["env"]["MAX_REQUESTS"] == "${{ inputs.max-requests }}"
    assert 0 < int(_default("max-requests")) < 1000
    assert _example_step()["with"]["max-requests"].endswith("|| '700' }}")


def test_the_collect_leaves_300_of_the_hour_to_other_workflows() -> None:
    collect = _action_steps()[_index("Collect")]
    assert '--reserve "$RESERVE"' in collect["run"]
    assert collect["env"]["RESERVE"] == "${{ inputs.reserve }}"
    assert int(_default("reserve")) == 300 == int(_example_step()["with"]["reserve"])


def test_a_seeding_run_posts_nothing_and_a_night_posts() -> None:
    """A dispatch with `seed` collects with the personal token and leaves the comment alone."""
    example = _example_step()["with"]
    assert example["post"] == "${{ !inputs.seed }}"
    assert "secrets.CIFLAKE_SEED_TOKEN" in example["token"]
    on = _load(WORKFLOW).get("on", _load(WORKFLOW).get(True))  # YAML 1.1: a bare `on` is true
    assert on["workflow_dispatch"]["inputs"]["seed"]["type"] == "boolean"
    assert "inputs.post == 'true'" in _action_steps()[_index("Post the summary")]["if"]


def test_a_failed_cleanup_or_count_does_not_stop_the_comment_but_a_failed_collect_does() -> None:
    """Steps run only after success unless their `if:` says otherwise: the comment depends on
    the collect alone, and no step but the save and the clean-up runs after a cancel."""
    collect = _action_steps()[_index("Collect")]
    post = _action_steps()[_index("Post the summary")]
    collected = f"steps.{collect['id']}.outcome == 'success'"
    assert post["if"] == f"${{{{ !cancelled() && inputs.post == 'true' && {collected} }}}}"
    assert _index("Keep one") < _index("Say how many runs") < _index("Post the summary")


def test_a_restore_that_failed_although_entries_exist_stops_the_night_before_the_collect() -> None:
    """action/check-restore.sh (tests/test_action_cache.py) fails the job then; the collect,
    the save and the clean-up do not run, so the next night retries the restore."""
    steps = _action_steps()
    guard = steps[_index("Stop when the restore failed")]
    assert guard["id"] == "guard" and guard.get("if") is None
    assert guard["run"] == 'bash "$GITHUB_ACTION_PATH/action/check-restore.sh"'
    restore = steps[_uses("actions/cache/restore")]
    assert guard["env"]["RESTORED"] == f"${{{{ steps.{restore['id']}.outputs.cache-matched-key }}}}"
    assert guard["env"]["REF"] == "${{ github.ref }}"
    assert guard["env"]["DEFAULT_BRANCH"] == "${{ github.event.repository.default_branch }}"
    assert _uses("actions/cache/restore") + 1 == _index("Stop when the restore failed")
    for step in steps[steps.index(guard) + 1 :]:
        assert step.get("if") is None or GUARD_PASSED in step["if"] or "steps.collect" in step["if"]


def test_the_night_runs_outside_beijing_working_hours() -> None:
    """verl's maintainers work 09:00-18:00 in Beijing (UTC+8): 01:00-10:00 UTC."""
    data = _load(WORKFLOW)
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    (entry,) = on["schedule"]
    minute, hour, *_ = entry["cron"].split()
    beijing = (int(hour) + 8) % 24 + int(minute) / 60
    assert not 9 <= beijing < 18, entry["cron"]


def _seed_check(seed: str, token: str) -> subprocess.CompletedProcess[str]:
    """Run the example's first step as the runner would (`shell: bash`), with its env rendered:
    ``seed`` is "true", "false" or, on a scheduled night, ""."""
    (job,) = _load(WORKFLOW)["jobs"].values()
    step = job["steps"][0]
    assert step["env"] == {
        "SEED": "${{ inputs.seed }}",
        "SEED_TOKEN": "${{ secrets.CIFLAKE_SEED_TOKEN }}",
    }
    assert step["shell"] == "bash" and "if" not in step
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env={"PATH": os.environ["PATH"], "SEED": seed, "SEED_TOKEN": token},
        capture_output=True,
        text=True,
    )


def test_a_seeding_run_without_its_secret_fails_before_anything_runs() -> None:
    """Without the secret, `inputs.seed && secrets.CIFLAKE_SEED_TOKEN || github.token` would be
    the workflow's token: the run fails with one line instead."""
    done = _seed_check("true", "")
    assert done.returncode == 1 and done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert line.startswith("::error title=ciflake seed::seed is ticked but the repository secret ")
    assert "CIFLAKE_SEED_TOKEN is not set: store a fine-grained personal token" in line


@pytest.mark.parametrize(
    ("seed", "token"), [("true", "github_pat_s3cret"), ("", ""), ("false", "")]
)
def test_a_night_or_a_seeding_run_with_its_secret_goes_on_silently(seed, token) -> None:
    done = _seed_check(seed, token)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_docs_say_to_pin_a_commit_until_a_release_is_tagged() -> None:
    """The example names a release tag that does not exist yet: a `uses:` at a missing tag
    fails the job, so the example's header and the docs say what to write meanwhile."""
    header = WORKFLOW.read_text().split("\nname:")[0]
    docs = (ROOT / "docs" / "commands.md").read_text()
    for text in (header, docs):
        assert "`uses: <owner>/ciflake@<40-hex SHA>`" in text
    assert "Until ciflake's repository has a release tag, `uses:` must name" in header
    assert "Until ciflake's repository has a release\ntag, `uses:` must name a commit SHA" in docs


def test_triage_is_off_by_default_and_runs_before_the_summary_only_on_a_posting_night() -> None:
    """`triage: "true"` files ciflake's issues before the comment that lists them; a seeding
    run (post false) files nothing; a failed triage does not stop the comment."""
    assert _default("triage") == "false"
    triage = _action_steps()[_index("Triage")]
    collected = f"steps.{_action_steps()[_index('Collect')]['id']}.outcome == 'success'"
    wanted = f"!cancelled() && inputs.post == 'true' && inputs.triage == 'true' && {collected}"
    assert triage["if"] == f"${{{{ {wanted} }}}}"
    assert "ciflake triage --post" in triage["run"] and '--repo "$repo"' in triage["run"]
    assert triage["env"]["GITHUB_TOKEN"] == "${{ inputs.token }}"
    assert _index("Collect") < _index("Triage") < _index("Post the summary")
    assert "!cancelled()" in _action_steps()[_index("Post the summary")]["if"]
    assert "triage" not in _example_step()["with"]  # off unless the maintainer turns it on
    permissions = WORKFLOW.read_text().split("permissions:", 1)[1].split("concurrency:", 1)[0]
    assert "issues: write" in permissions and 'triage: "true"' in permissions
