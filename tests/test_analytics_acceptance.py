"""Acceptance on fakehub's simulated verl history (stored as a collect would store it):
the OOM share across #6568/#6649, coverage lost at #7357, changepoints near true change dates."""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd
import pytest
from dashboard_db import fill_from_history

from analytics.before_after import category_shift
from analytics.changepoints import changepoints, daily_failures
from analytics.coverage import coverage_diff, lost_jobs
from analytics.outcomes import logical_jobs
from analytics.setup import event_table, job_renames
from ciflake.config import load_config
from ciflake.export import logical_run_frame
from store.engine import make_engine
from store.migrate import upgrade
from store.queries import RunFilter, load_jobs

pytestmark = pytest.mark.slow
LINEAGE = "e2e_v1_separate_async"  # fully_async and one_step_off, now v1 separate_async


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('accept') / 'ciflake.db'}")
    upgrade(engine)
    fill_from_history(engine, seed=7, scale=0.5)
    config = load_config()
    runs = logical_run_frame(engine, config, RunFilter())
    yield engine, config, runs
    engine.dispose()


def test_oom_share_drops_across_6568_and_6649(history):
    _, config, runs = history
    # Every run (pushes and PRs): the default branch alone holds ~25 red runs per side here.
    shift = category_shift(runs, event_table(config.events), scope="all")
    oom = shift[(shift["failure_category"] == "oom") & (shift["lineage"] == LINEAGE)]
    for pr in (6568, 6649):
        row = oom[oom["event_pr"] == pr].iloc[0]
        assert row["after_share"] < row["before_share"], pr
        assert row["after_per_run"] < row["before_per_run"], pr


def test_coverage_diff_at_7357_lists_the_trtllm_jobs(history):
    engine, config, runs = history
    jobs = logical_jobs(load_jobs(engine), runs, config.job_name_strip)
    lost = lost_jobs(coverage_diff(jobs, event_table(config.events), job_renames(config.lineages)))
    at_7357 = set(lost.loc[lost["event_pr"] == 7357, "logical_job"])
    assert {
        "trtllm_async_unit_tests",
        "e2e_fully_async_policy_trtllm_megatron_multi_replica",
    } <= at_7357
    # the renamed GPU jobs have successors: not lost
    assert "e2e_fully_async_policy_fsdp2" not in at_7357


def _true_change_dates() -> pd.Series:
    """Every date the simulation changes a failure process: regimes, bursts, invalid windows,
    workflows and jobs appearing or leaving, runner pools, and its events."""
    data = json.loads(resources.files("fakehub").joinpath("data/verl_ci.json").read_text())
    dates: list[str | None] = [e["at"] for e in data["events"]]
    dates += [r.get(k) for r in data["regimes"] for k in ("from", "to")]
    dates += [b["at"] for b in data["bursts"]]
    for workflow in data["workflows"]:
        dates += [d for span in workflow.get("present", []) for d in span]
        dates += [d for span in workflow.get("invalid", []) for d in span[:2]]
        for job in workflow["jobs"]:
            dates += [job.get(k) for k in ("from", "to", "needs_from")]
            dates += [r[0] for r in job.get("runners", [])]
    return pd.to_datetime(pd.Series([d for d in dates if d]), utc=True, format="ISO8601")


def test_changepoints_fall_within_3_days_of_true_changes(history):
    _, _, runs = history
    found = changepoints(daily_failures(runs))
    assert len(found) >= 2
    truth = _true_change_dates()
    for date in found["date"]:
        nearest = (truth - date).abs().min()
        assert nearest <= pd.Timedelta(days=3), date
