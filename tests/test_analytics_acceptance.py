"""Acceptance on fakehub's simulated verl history, stored by a real collect (PyGithub over HTTP):
the OOM share across #6568/#6649, coverage lost at #7357, changepoints near true change dates.

The first test to run waits for the two collects below (about 25 s and 20 s here), made once for
the session; every other reads a copy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from analytics.before_after import category_shift
from analytics.changepoints import (
    daily_failures,
    day_outcomes,
    job_set_changes,
    lineage_changepoints,
)
from analytics.config_tables import event_table, job_renames
from analytics.coverage import coverage_diff, lost_jobs
from analytics.evidence import LOG_EXPIRED, NO_LOG
from analytics.frames import logical_run_frame
from analytics.outcomes import logical_jobs
from fakehub.history import DEFAULT_END, History
from store.frame_queries import load_jobs
from store.page_queries import daily_job_presence
from store.runfilter import RunFilter
from store.settings import load_config
from tests.support.changepoint_seeds import search
from tests.support.collected import Scenario, collected
from tests.support.hubtools import migrated
from tests.support.settings import ANALYSIS
from tests.support.simulated_truth import (
    BIG_SHIFT,
    LINEAGE,
    MIN_SHIFT,
    TOLERANCE,
    expected_red,
    expected_shift,
    near,
    true_change_dates,
    with_nearest,
)

pytestmark = pytest.mark.slow
SEED = 7
# The smallest scale at which the changepoint assertions below hold for every seed tried
# (1-16): at 0.2 the June shift is missed on 5 of 8 seeds. A collect takes ~1 minute.
SCALE = 0.3


FULL = Scenario(seed=SEED, scale=SCALE, rate_limit=1_000_000)
# A collect made on 2026-07-01 of the runs since 2026-05-01.
JUNE = Scenario(
    seed=SEED,
    scale=SCALE,
    end=datetime(2026, 7, 1, tzinfo=UTC),
    since=datetime(2026, 5, 1, tzinfo=UTC),
    rate_limit=1_000_000,
)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A full collect of the whole simulated history (now = 2026-11-28)."""
    db = collected(FULL, tmp_path_factory.mktemp("accept"))
    assert db.report.runs_new > 0 and db.report.log_errors == 0
    engine, config = migrated(db.url), load_config()
    yield engine, config, logical_run_frame(engine, config.project(), RunFilter())
    engine.dispose()


@pytest.fixture(scope="module")
def june(tmp_path_factory):
    """The JUNE collect.

    GitHub keeps job logs for 90 days, so the full collect above (now = 2026-11-28) finds every
    June log expired and can only call those failures ``unknown``: the OOM share of #6568/#6649
    is measurable only from logs collected while they existed, which is why ciflake archives them.
    """
    db = collected(JUNE, tmp_path_factory.mktemp("june"))
    assert db.report.logs_expired == 0
    engine, config = migrated(db.url), load_config()
    yield logical_run_frame(engine, config.project(), RunFilter()), config
    engine.dispose()


def test_june_logs_are_expired_in_the_full_collect(history):
    # Every June log is gone: what is known of June's red runs rests on annotations and job
    # facts (an OOM kill's exit code 137, a time limit), the rest is unknown, never a guess.
    _, _, runs = history
    june = runs[(runs["created_at"] >= "2026-05-20") & (runs["created_at"] < "2026-06-22")]
    red = june[june["logical_outcome"].isin(["fail", "flaky"])]
    assert len(red) > 50 and not (red["failure_basis"] == "log").any()
    known = red[red["failure_category"] != "unknown"]
    assert len(known) and set(known["failure_basis"]) <= {"annotations", "job"}
    assert set(red.loc[red["failure_category"] == "unknown", "failure_basis"]) <= {
        LOG_EXPIRED,
        NO_LOG,
    }


def test_oom_share_drops_across_6568_and_6649(june):
    runs, config = june
    # The strongest version that holds on every seed tried (1-8 at this scale, 7 at scale 1):
    # every run (pushes and PRs); at #6568 the OOM share of red runs and the OOM runs per run
    # drop; at #6649 the OOM runs per run drop; and across the pair, the 14 days before #6568
    # against the 14 days after #6649, both the share and the runs per run drop (seeds 1-8: the
    # share from 0.29-0.67 to 0.05-0.27). Not asserted, because they do not hold in general: the
    # default branch alone (0-7 OOM runs a side here: its share rises at #6568 on seed 1, at
    # #6649 on seeds 1, 4 and 6, across the pair on seed 1, 0.17 -> 0.20, and at #6649 on seed
    # 7 at scale 1), and the share at #6649 alone (rises on seed 4, 0.22 -> 0.27): its before
    # window holds #6568's invalid-file window and its after window #6551's, whose ci_config
    # reds dilute the share, and the rollout-memory OOM regime (#6649 until #6784) starts there.
    shift = category_shift(
        runs, event_table(config.project().events), ANALYSIS, scope="all", default_branch="main"
    )
    oom = shift[(shift["failure_category"] == "oom") & (shift["lineage"] == LINEAGE)]
    oom = oom.set_index("event_pr")
    assert oom.loc[6568, "after_share"] < oom.loc[6568, "before_share"]
    for pr in (6568, 6649):
        assert oom.loc[pr, "after_per_run"] < oom.loc[pr, "before_per_run"], pr
    for column in ("share", "per_run"):
        before, after = oom.loc[6568, f"before_{column}"], oom.loc[6649, f"after_{column}"]
        assert after < before, column


def test_coverage_diff_at_7357_lists_the_trtllm_jobs(history):
    engine, config, runs = history
    jobs = logical_jobs(load_jobs(engine), runs, config.project().job_name_strip)
    lost = lost_jobs(
        coverage_diff(
            jobs,
            event_table(config.project().events),
            job_renames(config.project().lineages),
            window_days=config.project().analysis.window_days,
        )
    )
    at_7357 = set(lost.loc[lost["event_pr"] == 7357, "logical_job"])
    assert {
        "trtllm_async_unit_tests",
        "e2e_fully_async_policy_trtllm_megatron_multi_replica",
    } <= at_7357
    # the renamed GPU jobs have successors: not lost
    assert "e2e_fully_async_policy_fsdp2" not in at_7357


def _report(found: pd.DataFrame, daily: pd.DataFrame, truth: pd.DataFrame) -> None:
    for lineage, days in daily.groupby("lineage"):
        dates = truth.loc[truth["lineage"] == lineage, "date"]
        share = near(days["day"], dates).mean()
        print(f"{lineage}: {len(dates)} true dates; {share:.0%} of its days lie within 3 days")
        for row in found[found["lineage"] == lineage].itertuples():
            print(
                f"  {row.date:%Y-%m-%d} [{row.date_low:%m-%d}..{row.date_high:%m-%d}] "
                f"{row.before_rate:.2f}->{row.after_rate:.2f} (simulated "
                f"{row.expected_before:.2f}->{row.expected_after:.2f}) nearest "
                f"{row.true_date:%Y-%m-%d} ({row.distance_days:+.1f} d): {row.why}"
                + (f" | job set: {row.known_change}" if row.known_change else "")
            )


@dataclass(frozen=True)
class Found:
    """The changepoint search on the collected history, as the dashboard runs it."""

    daily: pd.DataFrame  # daily_failures of the logical runs
    truth: pd.DataFrame  # true_change_dates
    known: pd.DataFrame  # job_set_changes read from the stored jobs
    runs: pd.DataFrame  # logical runs with expected_red (fakehub's own failure model)
    changepoints: pd.DataFrame  # with the nearest true date and the simulated rates around


def _with_expected(found: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    shifts = [expected_shift(runs, row.lineage, row.date) for row in found.itertuples()]
    return found.assign(
        expected_before=[b for b, _ in shifts], expected_after=[a for _, a in shifts]
    )


@pytest.fixture(scope="module")
def found_changepoints(history) -> Found:
    engine, config, runs = history
    presence = daily_job_presence(engine)
    lineage_of = runs.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"]
    truth = true_change_dates(config)
    runs = runs.merge(expected_red(History(SEED, SCALE, DEFAULT_END)), on="run_id")
    found = with_nearest(lineage_changepoints(runs, runs, presence), truth)
    found = _with_expected(found, runs)
    daily = daily_failures(runs)
    _report(found, daily, truth)
    known = job_set_changes(presence, day_outcomes(runs, ["workflow_path"]), lineage_of)
    return Found(daily, truth, known, runs, found)


def test_changepoints_fall_within_3_days_of_true_changes(found_changepoints):
    daily, truth, found = (
        found_changepoints.daily,
        found_changepoints.truth,
        found_changepoints.changepoints,
    )
    # The truth set is sparse enough for the test to fail: most days are not near a true date.
    subject_days = daily.loc[daily["lineage"] == LINEAGE, "day"]
    subject_truth = truth.loc[truth["lineage"] == LINEAGE, "date"]
    assert near(subject_days, subject_truth).mean() < 0.5

    # Precision: every changepoint of the migration's lineage is a true change.
    subject = found[found["lineage"] == LINEAGE]
    assert not subject.empty
    assert (subject["distance_days"].abs() <= TOLERANCE / pd.Timedelta(days=1)).all(), subject

    # Recall: the biggest shift is found, as a drop, near one of its true dates.
    lo, hi = BIG_SHIFT
    shift_dates = subject_truth[(subject_truth >= lo) & (subject_truth <= hi)]
    assert len(shift_dates) >= 4  # #6568, #6649, #6551, #6823
    near_shift = near(subject["date"], shift_dates)
    drops = subject[near_shift & (subject["after_rate"] < subject["before_rate"])]
    assert not drops.empty, subject


# Every lineage of the verl configuration (asserted against the collected runs below).
LINEAGES = (
    "e2e_ascend",
    "e2e_fully_async_policy_trtllm",
    "e2e_v1_separate_async",
    "e2e_v1_separate_async_ascend",
    "e2e_v1_separate_async_opd",
    "e2e_v1_separate_async_nightly",  # scheduled, added by #7357
)
# Truth sets so dense that precision cannot fail: the share of the lineage's days within 3 days
# of a true date, measured on seeds 1-8 (the trtllm workflow lived 97 days with 16 true dates:
# its jobs come and go). Its precision is still asserted, but proves little; no changepoint was
# found there on any seed tried.
DENSE = {"e2e_fully_async_policy_trtllm": "62-70%"}


@pytest.mark.parametrize("lineage", LINEAGES)
def test_changepoints_of_every_lineage_fall_within_3_days_of_true_changes(
    found_changepoints, lineage
):
    # Every job set change is a true date (test below), so a cut the known days drew there
    # passes this test by construction; the next test asks more of it.
    daily, truth, found = (
        found_changepoints.daily,
        found_changepoints.truth,
        found_changepoints.changepoints,
    )
    assert set(daily["lineage"]) <= set(LINEAGES)
    mine = found[found["lineage"] == lineage]
    # Whether the check could fail: the share of the lineage's days near one of its true dates.
    days = daily.loc[daily["lineage"] == lineage, "day"]
    share = near(days, truth.loc[truth["lineage"] == lineage, "date"]).mean()
    if lineage in DENSE:
        assert share >= 0.5, f"{lineage}: {share:.0%} of days near a true date; not DENSE"
    else:
        assert share < 0.5, f"{lineage}: {share:.0%} of days near a true date"
    assert (mine["distance_days"].abs() <= TOLERANCE / pd.Timedelta(days=1)).all(), mine


def test_every_changepoint_is_a_shift_of_the_simulated_red_rate(found_changepoints):
    # Not only near a date the simulation changes something: across each changepoint the red
    # rate fakehub draws from (its failure model, per run) moves by MIN_SHIFT or more, the way
    # the changepoint says. A search that cut on every job set change would fail here: some
    # change the rate by less (a fourth Ascend job joining for ten days, a cleanup job).
    found, known, runs = (
        found_changepoints.changepoints,
        found_changepoints.known,
        found_changepoints.runs,
    )
    moved = found["expected_after"] - found["expected_before"]
    assert (moved.abs() >= MIN_SHIFT).all(), found[moved.abs() < MIN_SHIFT]
    assert (np.sign(moved) == np.sign(found["after_rate"] - found["before_rate"])).all(), found
    still = [
        abs(after - before) < MIN_SHIFT
        for before, after in (expected_shift(runs, r.lineage, r.day) for r in known.itertuples())
    ]
    assert any(still), "every job set change moves the rate: the check above proves little"


def test_job_set_changes_read_from_the_data_are_true_change_dates(found_changepoints):
    # The known days come from the stored jobs alone; each must be one of the simulation's
    # (a job's from/to or absence, a workflow's presence, an invalid window), within a day:
    # a change inside a day shows on that day or the next.
    truth, known = found_changepoints.truth, found_changepoints.known
    # the nightly's jobs never change: its first day is no job set change
    assert set(known["lineage"]) == set(LINEAGES) - {"e2e_v1_separate_async_nightly"}
    for lineage, days in known.groupby("lineage"):
        dates = truth.loc[truth["lineage"] == lineage, "date"]
        close = [(dates - day).abs().min() <= pd.Timedelta(days=1) for day in days["day"]]
        assert all(close), days[[not c for c in close]]


def test_e2e_ascend_steps_dated_on_their_job_set_changes(found_changepoints):
    # e2e_ascend has ~3.5 runs a day and two steps: 2025-12-10 (one NPU job becomes three, red
    # 0.14 -> 0.38) and 2026-08-14 (three become two, 0.31 -> 0.22). Searched freely, the first
    # landed 5 days late on this seed, 4 days off or more on 8 of 16 seeds, and the second
    # drifted up to 11 days (its likelihood moves ~0.1 a day); with the job set changes as
    # known days both land on their day on 15 of seeds 1-16 (seed 3 cuts on 2025-12-28, when
    # a fourth job joins, instead of 12-10: python -m tests.support.changepoint_seeds).
    found = found_changepoints.changepoints
    mine = found[found["lineage"] == "e2e_ascend"]
    mine = mine.set_index(mine["date"].dt.strftime("%Y-%m-%d"))
    assert {"2025-12-10", "2026-08-14"} <= set(mine.index), mine
    rise, drop = mine.loc["2025-12-10"], mine.loc["2026-08-14"]
    assert rise["after_rate"] > rise["before_rate"] and drop["after_rate"] < drop["before_rate"]
    assert "+E2E Ascend testing for RL training scenarios of LLM models" in rise["known_change"]
    assert "-" in drop["known_change"]


def test_the_seed_sweep_finds_what_the_collect_finds(found_changepoints, history):
    # tests.support.changepoint_seeds reads fakehub's History instead of collecting it, to sweep
    # seeds in seconds: on this seed it must find the very changepoints the collected database
    # gives.
    _, config, _ = history
    swept = search(SEED, SCALE, config, found_changepoints.truth)["known"]
    columns = ["lineage", "date", "date_low", "date_high", "before_runs", "after_runs"]
    columns.append("known_change")
    pd.testing.assert_frame_equal(swept[columns], found_changepoints.changepoints[columns])
