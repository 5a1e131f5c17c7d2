"""SILENT on every surface (issue #48): a disabled workflow, one whose file is gone and one
whose schedule never fires read SILENT with their reason in the Overview's tiles, the nightly
summary (which opens with them) and ``ciflake doctor``; a retired workflow whose file is gone
never does. The facts are written into a copy of the collected database as the collector
stores them (workflows.state, workflow_triggers)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from analytics.config_tables import event_table
from analytics.frames import logical_run_frame
from analytics.outcomes import in_scope
from analytics.recent import tile_tables
from analytics.silence import DISABLED, GONE, NOT_FIRING
from ciflake.cli import cli
from ciflake.demo import demo_config
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports.markdown import md_text
from reports.summary import load_summary
from reports.summary_render import MARKER, render_summary
from store.engine import make_engine
from store.events import all_events
from store.models import Workflow
from store.page_queries import run_span
from store.runfilter import RunFilter
from store.settings import load_config
from store.triggers import save_triggers
from tests.support.collected import collected_copy

REPO = "verl-project/verl"
WF = ".github/workflows/"
DISABLED_PATH = WF + "e2e_v1_separate_async_ascend.yml"
GONE_PATH = WF + "e2e_ascend.yml"
NEVER_PATH = WF + "e2e_v1_separate_async_opd.yml"
RETIRED_PATH = WF + "e2e_fully_async_policy.yml"  # retired by #7357's migration


@pytest.fixture(scope="module")
def silenced(tmp_path_factory) -> Iterator[str]:
    url = collected_copy(tmp_path_factory.mktemp("silent"))
    engine = make_engine(url)
    disabled_at = pd.Timestamp(run_span(engine, REPO)[1]).ceil("D")  # after its last run
    now = datetime.now(UTC)
    nightly = {"events": ["schedule"], "schedule": [{"cron": "0 4 * * 0", "timezone": None}]}
    pushed = {"events": ["push", "pull_request"], "schedule": []}
    files = {DISABLED_PATH: (True, pushed), GONE_PATH: (False, pushed)}
    files |= {NEVER_PATH: (True, nightly), RETIRED_PATH: (False, pushed)}
    with Session(engine) as session, session.begin():
        session.execute(
            update(Workflow)
            .where(Workflow.path == DISABLED_PATH)
            .values(state="disabled_inactivity", updated_at=disabled_at.to_pydatetime())
        )
        rows = [
            {"repo": REPO, "path": path, "file_present": present, "triggers": triggers}
            for path, (present, triggers) in files.items()
        ]
        save_triggers(session, [row | {"sha": None, "checked_at": now} for row in rows])
    engine.dispose()
    yield url, disabled_at


NIGHTLY = WF + "e2e_v1_separate_async_nightly.yml"  # fakehub's: its cron stops firing
EXPECTED = {DISABLED_PATH: DISABLED, GONE_PATH: GONE, NEVER_PATH: NOT_FIRING, NIGHTLY: NOT_FIRING}


def test_the_overview_tiles_read_silent_with_reason_and_since(silenced, monkeypatch):
    silenced, disabled_at = silenced
    monkeypatch.setenv("CIFLAKE_DB_URL", silenced)
    monkeypatch.delenv("CIFLAKE_CONFIG", raising=False)
    newest = run_span(make_engine(silenced), REPO)[1]
    filters = Filters(REPO, datetime(2025, 1, 1).date(), pd.Timestamp(newest).date(), (), "all")
    tiles = shared.table(silenced, filters, "status")
    workflows = tiles[tiles["level"] == "workflow"].set_index("name")
    silent = workflows[workflows["status"] == "SILENT"]
    assert silent["silent_reason"].to_dict() == EXPECTED
    assert silent.loc[DISABLED_PATH, "silent_since"] == disabled_at
    assert silent.loc[DISABLED_PATH, "silent_detail"] == "disabled by GitHub for inactivity"
    assert workflows.loc[RETIRED_PATH, "status"] == "RETIRED"


def test_the_summary_opens_with_them_and_doctor_reports_them(silenced, runner):
    silenced, disabled_at = silenced
    config = load_config(env={}, db_url=silenced)
    engine = make_engine(silenced)
    project = config.project()
    data = load_summary(
        engine,
        project,
        all_events(project, engine),
        pr=7357,
        since=datetime(2026, 11, 1, tzinfo=UTC),
        now=datetime(2026, 12, 1, tzinfo=UTC),
    )
    text = render_summary(data)
    first = text.removeprefix(MARKER + "\n").split("\n\n")
    assert first[0] == "### 🔇 4 workflows should have run and did not"
    lines = first[1].splitlines()
    assert len(lines) == 4 and all(line.startswith("- **SILENT** ") for line in lines)
    assert (
        f"- **SILENT** {md_text('e2e_v1_separate_async_ascend')}: disabled by GitHub for "
        f"inactivity; silent since {disabled_at:%Y-%m-%d %H:%M} UTC" in lines
    )
    assert "e2e_fully_async_policy:" not in first[1]
    assert not set(data.stale["workflow_path"]) & set(EXPECTED)
    result = runner.invoke(
        cli,
        ["doctor", "--api-url", "http://127.0.0.1:9", "--since", "2026-10-01"],
        env={"CIFLAKE_DB_URL": silenced, "GITHUB_TOKEN": "x"},
    )
    silent = [line for line in result.output.splitlines() if line.startswith("SILENT ")]
    assert sorted(s.split(":")[0] for s in silent) == [f"SILENT {p}" for p in sorted(EXPECTED)]
    assert f"SILENT {GONE_PATH}: its file is gone" in result.output
    assert result.exit_code == 1  # the unreachable API fails its checks; SILENT only warns
    engine.dispose()


def test_the_demo_at_any_hour_shows_no_stale_tile_for_a_workflow_on_its_siblings_commits(demo_db):
    """The demo's last day cut every 3 hours, as a demo started then would see it: a
    push-driven workflow is STALE only when its siblings ran on commits after its last run.
    e2e_v1_separate_async (pushes cluster in working hours; a quiet night read STALE 9 hours
    after its last run) is never STALE."""
    engine = make_engine(demo_db)
    project = demo_config(demo_db).project(REPO)
    runs = logical_run_frame(engine, project, RunFilter(REPO, None, None))
    runs = runs[in_scope(runs, "default", project.default_branch)]
    end = runs["created_at"].max()
    events = event_table(all_events(project, engine))
    pushes = runs[runs["event"] == "push"]
    for hour in range(0, 24, 3):
        cut = runs[runs["created_at"] <= end - pd.Timedelta(hours=hour)]
        reference = cut["created_at"].max()
        tiles = tile_tables(cut, reference, events, project.analysis, recent_days=14)
        stale = tiles[(tiles["level"] == "workflow") & (tiles["status"] == "STALE")]
        assert WF + "e2e_v1_separate_async.yml" not in set(stale["name"]), hour
        seen = pushes[pushes["created_at"] <= reference]
        for path, last in zip(stale["name"], stale["last_run"], strict=True):
            if path in set(seen["workflow_path"]):  # push-driven: siblings went on without it
                assert (seen["created_at"] > last).any(), (hour, path)
    engine.dispose()
