"""The collector's read of each tracked workflow's triggers (collector.triggers): `on:` in
its forms, schedules with a timezone; and, on fakehub's histories, the simulated silent
workflows read SILENT after a collect."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from sqlalchemy.orm import Session

from analytics.silence import DISABLED, GONE, NOT_FIRING, silent_workflows
from ciflake.demo import demo_config
from collector.client import NotFound, ResourceError
from collector.triggers import parse_triggers, read_triggers
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


class _Hub:
    """A client for collector.triggers: ``answers`` by path, each (status, headers, body) or
    an error to raise; a listing asked with its ETag answers 304. Records (path, etag)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str | None]] = []

    def get(self, path: str, params: dict[str, Any] | None = None, *, etag: str | None = None):
        self.asked.append((path, etag))
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        status, headers, body = answer
        return (304, {}, None) if etag and etag == headers.get("etag") else answer


LISTING = f"/repos/{VERL}/contents/.github/workflows"
NIGHTLY, WEEKLY = WF + "nightly.yml", WF + "weekly.yml"


def _file(path: str, text: str) -> tuple[int, dict[str, str], dict[str, str]]:
    return 200, {}, {"path": path, "content": base64.b64encode(text.encode()).decode()}


def _hub(*paths: str) -> _Hub:
    """The listing of ``paths``, its ETag the count of files it lists."""
    entries = [{"path": path, "type": "file", "sha": f"sha-{path}"} for path in paths]
    return _Hub(
        {
            LISTING: (200, {"etag": f'W/"{len(paths)}"'}, entries),
            f"/repos/{VERL}/contents/{NIGHTLY}": _file(
                NIGHTLY, "on:\n  schedule: [cron: '0 2 * * *']"
            ),
            f"/repos/{VERL}/contents/{WEEKLY}": _file(WEEKLY, "on: push"),
        }
    )


@pytest.mark.sqlite_only
def test_an_unchanged_listing_costs_one_304_and_keeps_the_rows_read_from_it(engine):
    hub = _hub(NIGHTLY)
    etag = read_triggers(engine, hub, VERL, "main", [NIGHTLY], None)
    assert etag == 'W/"1"' and len(hub.asked) == 2  # the listing, the file
    with Session(engine) as session:
        first = stored_triggers(session, VERL)[NIGHTLY]
    hub.asked.clear()
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY], etag) == etag
    assert hub.asked == [(LISTING, etag)]  # a 304: no file read
    with Session(engine) as session:
        again = stored_triggers(session, VERL)[NIGHTLY]
    assert (again.file_present, again.sha, again.triggers) == (True, first.sha, first.triggers)
    assert again.checked_at > first.checked_at
    hub.asked.clear()  # a path never read: the listing in full
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], etag) == etag
    assert hub.asked[0] == (LISTING, None)
    with Session(engine) as session:
        assert stored_triggers(session, VERL)[WEEKLY].file_present is False
    hub = _hub(NIGHTLY, WEEKLY)  # a file refused: no ETag kept, its row is stale
    hub.answers[f"/repos/{VERL}/contents/{WEEKLY}"] = ResourceError("refused", 403)
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], etag) is None


@pytest.mark.sqlite_only
def test_a_404_on_the_default_branch_listing_is_the_folder_deleted_not_an_unknown_branch(engine):
    """The folder deleted: every tracked file gone. A 404 for a branch that is not the
    repository's default (no such branch) or a 403 leaves the rows as they were."""
    hub = _hub(NIGHTLY, WEEKLY)
    read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], None)
    repo = f"/repos/{VERL}"

    def present() -> dict[str, bool]:
        with Session(engine) as session:
            rows = stored_triggers(session, VERL).values()
            return {row.path: row.file_present for row in rows}

    hub.answers[LISTING] = ResourceError("refused", 403)
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], None) is None
    assert present() == {NIGHTLY: True, WEEKLY: True}
    hub.answers |= {LISTING: NotFound("404"), repo: (200, {}, {"default_branch": "trunk"})}
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], None) is None
    assert present() == {NIGHTLY: True, WEEKLY: True}
    hub.answers[repo] = (200, {}, {"default_branch": "main"})
    assert read_triggers(engine, hub, VERL, "main", [NIGHTLY, WEEKLY], None) is None
    assert present() == {NIGHTLY: False, WEEKLY: False}
