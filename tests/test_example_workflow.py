"""examples/nightly-summary.yml keeps the database across nights and collects within a budget."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parent.parent / "examples" / "nightly-summary.yml"


def _steps() -> list[dict]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (job,) = data["jobs"].values()
    return job["steps"]


def test_the_database_is_saved_even_when_the_night_is_cut_off() -> None:
    steps = _steps()
    saves = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save")]
    assert len(saves) == 1 and saves[0].get("if") == "always()"
    restore = next(i for i, s in enumerate(steps) if "cache/restore" in str(s.get("uses", "")))
    collect = next(i for i, s in enumerate(steps) if "ciflake collect" in str(s.get("run", "")))
    assert restore < collect < steps.index(saves[0])
    assert saves[0]["with"]["path"] == steps[restore]["with"]["path"]


def test_the_collect_has_a_request_budget_under_a_workflow_tokens_hour() -> None:
    (collect,) = [s["run"] for s in _steps() if "ciflake collect" in str(s.get("run", ""))]
    words = collect.split()
    budget = int(words[words.index("--max-requests") + 1])
    assert 0 < budget < 1000


def _step(name_part: str) -> dict:
    return next(s for s in _steps() if name_part in str(s.get("name", "")))


def test_the_collect_leaves_300_of_the_hour_to_other_workflows() -> None:
    words = _step("Collect").get("run", "").split()
    assert int(words[words.index("--reserve") + 1]) == 300


def test_the_night_runs_outside_beijing_working_hours() -> None:
    """verl's maintainers work 09:00-18:00 in Beijing (UTC+8): 01:00-10:00 UTC."""
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    (entry,) = on["schedule"]
    minute, hour, *_ = entry["cron"].split()
    beijing = (int(hour) + 8) % 24 + int(minute) / 60
    assert not 9 <= beijing < 18, entry["cron"]


def test_one_database_cache_entry_is_kept(tmp_path) -> None:
    """The clean-up step, run with a stand-in `gh`: every older entry is deleted, tonight's is
    kept, and nothing is deleted unless tonight's entry was saved."""
    import os
    import subprocess

    save = _step("Save the database")
    keep = _step("Keep one database cache entry")
    assert keep["env"]["KEEP"] == save["with"]["key"]
    assert "steps.save.outcome == 'success'" in keep["if"] and save["id"] == "save"
    fake = tmp_path / "gh"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = list ]; then printf "ciflake-db-1\\nciflake-db-7\\nciflake-db-9\\n"; fi\n'
        f'if [ "$2" = delete ]; then echo "$3" >> {tmp_path}/deleted; fi\n'
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "KEEP": "ciflake-db-7",
        "GITHUB_REPOSITORY": "o/r",
    }
    subprocess.run(["bash", "-e", "-c", keep["run"]], env=env, check=True)
    assert (tmp_path / "deleted").read_text().split() == ["ciflake-db-1", "ciflake-db-9"]
