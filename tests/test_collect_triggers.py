"""The collector's read of each tracked workflow's triggers (collector.triggers): `on:` in
its forms, schedules with a timezone; and, on fakehub's histories, the simulated silent
workflows read SILENT after a collect."""

from __future__ import annotations

from sqlalchemy.orm import Session

from analytics.silence import DISABLED, GONE, NOT_FIRING, silent_workflows
from ciflake.demo import demo_config
from collector.triggers import parse_triggers
from store.engine import make_engine
from store.triggers import stored_triggers
from tests.support.collected import Scenario, collected_copy

VERL, RECIPE = "verl-project/verl", "verl-project/verl-recipe"
BOTH = Scenario(repos=(VERL, RECIPE))  # tests/test_two_repositories.py's: one shared collect
WF = ".github/workflows/"


def test_on_in_every_form_and_a_schedule_with_its_timezone():
    assert parse_triggers("on: push\njobs: {}") == {"events": ["push"], "schedule": []}
    assert parse_triggers("on: [push, pull_request]") == {
        "events": ["push", "pull_request"],
        "schedule": [],
    }
    text = (
        "on:\n  schedule:\n    - cron: '0 2 * * *'\n      timezone: Asia/Shanghai\n"
        "    - cron: '30 4 * * 0'\n  workflow_dispatch:\n"
    )
    assert parse_triggers(text) == {
        "events": ["schedule", "workflow_dispatch"],
        "schedule": [
            {"cron": "0 2 * * *", "timezone": "Asia/Shanghai"},
            {"cron": "30 4 * * 0", "timezone": None},
        ],
    }
    assert parse_triggers("jobs: [") is None and parse_triggers("name: x") is None


def test_a_collect_reads_the_listing_and_files_and_the_simulated_silences_read_silent(tmp_path):
    """fakehub's silent workflows, after one collect of verl and its recipes repository: the
    recipe nightly disabled for inactivity, the recipe weekly whose file was deleted with no
    event, and verl's nightly whose cron stopped firing; #7357's retired workflow (its file
    gone too) is not SILENT, and every other tracked file is present with its triggers."""
    db = collected_copy(tmp_path, BOTH)
    engine = make_engine(db)
    config = demo_config(db)
    found = {
        repo: silent_workflows(engine, config.project(repo)).set_index("workflow_path")["reason"]
        for repo in (VERL, RECIPE)
    }
    assert found[RECIPE].to_dict() == {
        WF + "recipe_dapo_nightly.yml": DISABLED,
        WF + "recipe_dapo_npu_weekly.yml": GONE,
    }
    assert found[VERL].to_dict() == {WF + "e2e_v1_separate_async_nightly.yml": NOT_FIRING}
    with Session(engine) as session:
        rows = stored_triggers(session, VERL)
    assert set(rows) == {w.path for w in config.project(VERL).workflows}
    assert rows[WF + "e2e_fully_async_policy.yml"].file_present is False  # retired by #7357
    nightly = rows[WF + "e2e_v1_separate_async_nightly.yml"].triggers
    assert nightly is not None and nightly["schedule"][0]["timezone"] == "Asia/Shanghai"
    engine.dispose()
