"""Coverage diff, changepoints and operational health on small hand-computed tables."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from analytics.changepoints import (
    changepoints,
    daily_failures,
    daily_red,
    job_set_changes,
    nearest_events,
)
from analytics.config_tables import event_table
from analytics.coverage import coverage_diff, lost_jobs, successor_names
from analytics.health import (
    HEALTH_COLUMNS,
    REPAIR_COLUMNS,
    devices,
    health_table,
    mttr,
    repair_times,
    retry_tax,
    timing,
)
from analytics.successors import successor_first_runs
from tests.support.analytics_frames import day, jobs_frame, runs_frame


class _Event:
    def __init__(self, when, kind="migration", lineages=None, pr=7357):
        self.date, self.title, self.pr, self.kind, self.lineages = when, "t", pr, kind, lineages


RENAMES = {"v1": {"e2e_fully_async_policy": "e2e_v1_separate_async"}, "trt": {}}


def test_successor_names_replace_the_longest_stem_at_a_word_boundary():
    names = pd.Series(
        ["e2e_fully_async_policy_fsdp2", "e2e_fully_async_policy_opd_x", "e2e_fully_async_policyX"]
    )
    renames = {"L": {"e2e_fully_async_policy": "v1", "e2e_fully_async_policy_opd": "v1_opd"}}
    out = successor_names(names, pd.Series(["L"] * 3), renames)
    assert out.tolist() == ["v1_fsdp2", "v1_opd_x", "e2e_fully_async_policyX"]


def _coverage_jobs() -> pd.DataFrame:
    rows = [
        # before the event (day 10): the old workflow of lineage v1, and trt
        (1, day(5), "old.yml", "v1", "e2e_fully_async_policy_fsdp2"),
        (1, day(5), "old.yml", "v1", "e2e_fully_async_policy_megatron"),
        (2, day(6), "trt.yml", "trt", "trtllm_async_unit_tests"),
        (2, day(6), "trt.yml", "trt", "e2e_fully_async_policy_trtllm_megatron_multi_replica"),
        # after: only the fsdp2 successor runs, plus a new job
        (3, day(11), "new.yml", "v1", "e2e_v1_separate_async_fsdp2"),
        (3, day(11), "new.yml", "v1", "e2e_v1_separate_async_new"),
    ]
    frame = pd.DataFrame(
        rows, columns=["run_id", "created_at", "workflow_path", "lineage", "logical_job"]
    )
    return frame.assign(logical_outcome="pass")


def test_coverage_diff_hand_computed():
    events = event_table(
        [_Event(datetime(2026, 6, 11, tzinfo=UTC)), _Event(day(3), kind="fix", pr=1)]
    )
    diff = coverage_diff(_coverage_jobs(), events, RENAMES, window_days=14)
    status = dict(zip(diff["logical_job"], diff["status"], strict=True))
    assert status == {
        "e2e_fully_async_policy_fsdp2": "kept",
        "e2e_fully_async_policy_megatron": "lost",
        "trtllm_async_unit_tests": "lost",
        "e2e_fully_async_policy_trtllm_megatron_multi_replica": "lost",
        "e2e_v1_separate_async_new": "added",
    }
    lost = lost_jobs(diff).set_index("logical_job")
    # a lost job's successor_job is its own name unless renamed: not a column of the lost
    assert "successor_job" not in lost.columns
    assert lost.loc["e2e_fully_async_policy_megatron", "successor"] == (
        "no successor (e2e_v1_separate_async_megatron did not run)"
    )
    assert lost.loc["trtllm_async_unit_tests", "successor"] == "no successor"
    assert lost.loc["trtllm_async_unit_tests", "last_workflow_path"] == "trt.yml"
    assert lost.loc["trtllm_async_unit_tests", "before_runs"] == 1
    assert lost["last_run_url"].isna().all()  # these jobs carry no html_url
    assert (diff["event_pr"] == 7357).all()  # the fix event is not a migration


def test_lost_jobs_link_their_last_run_before_the_event():
    jobs = _coverage_jobs()
    jobs = jobs.assign(html_url="https://github.com/o/r/actions/runs/" + jobs["run_id"].astype(str))
    lost = lost_jobs(coverage_diff(jobs, event_table([_Event(day(10))]), RENAMES, window_days=14))
    urls = dict(zip(lost["logical_job"], lost["last_run_url"], strict=True))
    assert urls["trtllm_async_unit_tests"] == "https://github.com/o/r/actions/runs/2"
    assert urls["e2e_fully_async_policy_megatron"] == "https://github.com/o/r/actions/runs/1"


def test_coverage_diff_empty_window():
    events = event_table([_Event(datetime(2027, 1, 1, tzinfo=UTC))])
    assert coverage_diff(_coverage_jobs(), events, RENAMES, window_days=14).empty


def _daily(rates: list[float], runs_per_day: int = 10) -> pd.DataFrame:
    days = pd.date_range("2026-05-01", periods=len(rates), freq="D", tz="UTC")
    red = np.round(np.array(rates) * runs_per_day).astype(int)
    return pd.DataFrame({"lineage": "L", "day": days, "runs": runs_per_day, "red": red})


def test_changepoint_found_at_the_true_date_with_an_interval():
    found = changepoints(_daily([0.5] * 20 + [0.0] * 20))
    assert len(found) == 1
    row = found.iloc[0]
    assert row["date"] == pd.Timestamp("2026-05-21", tz="UTC")
    assert row["date_low"] <= row["date"] <= row["date_high"]
    assert row["before_rate"] == pytest.approx(0.5) and row["after_rate"] == 0.0
    assert (row["before_runs"], row["after_runs"]) == (200, 200)


def test_changepoints_two_shifts_and_none_in_a_flat_series():
    found = changepoints(_daily([0.1] * 15 + [0.6] * 15 + [0.1] * 15))
    assert found["date"].dt.strftime("%m-%d").tolist() == ["05-16", "05-31"]
    assert changepoints(_daily([0.2] * 40)).empty
    assert changepoints(_daily([])).empty


def test_changepoints_two_nearby_steps_each_at_its_true_day():
    # A short high stretch between two lower ones of unequal rates (20 runs a day): from the
    # whole series no single cut gains enough, so binary segmentation's first step found
    # nothing and never looked again (at penalty_factor 1.5 as at 2.5); the best partition has
    # both steps, each on its true day.
    found = changepoints(_daily([0.1] * 15 + [0.5] * 6 + [0.15] * 30, runs_per_day=20))
    assert found["date"].dt.strftime("%m-%d").tolist() == ["05-16", "05-22"]
    assert found["before_rate"].tolist() == pytest.approx([0.1, 0.5])
    assert found["after_rate"].tolist() == pytest.approx([0.5, 0.15])
    assert found["after_runs"].tolist() == [120, 600]


def _binomial_loglik(red: int, runs: int) -> float:
    return sum(x * math.log(x / runs) for x in (red, runs - red) if x > 0)


def test_changepoint_interval_is_its_profile_likelihood_interval():
    # 20 days at 1/10 red, a two-day ramp at 3/10, 18 days at 6/10 (10 runs a day). The best cut
    # is after the ramp (05-23); cutting before the ramp (05-21) loses 0.62 of log-likelihood,
    # within 1.92, so the interval is 05-21..05-23; one day further either way loses > 5.
    found = changepoints(_daily([0.1] * 20 + [0.3] * 2 + [0.6] * 18))
    assert len(found) == 1
    row = found.iloc[0]
    cut = {  # cut before day i: red and runs on either side
        i: _binomial_loglik(*left) + _binomial_loglik(*right)
        for i, left, right in [
            (19, (19, 190), (115, 210)),
            (20, (20, 200), (114, 200)),
            (21, (23, 210), (111, 190)),
            (22, (26, 220), (108, 180)),
            (23, (32, 230), (102, 170)),
        ]
    }
    assert max(cut, key=cut.get) == 22
    assert cut[22] - cut[20] == pytest.approx(0.62, abs=0.01)
    assert cut[22] - cut[19] > 5 and cut[22] - cut[23] > 5
    assert row["date"] == pd.Timestamp("2026-05-23", tz="UTC")
    assert (row["date_low"], row["date_high"]) == (
        pd.Timestamp("2026-05-21", tz="UTC"),
        pd.Timestamp("2026-05-23", tz="UTC"),
    )
    assert row["gain"] == pytest.approx(cut[22] - _binomial_loglik(134, 400))


def _known(*days: str) -> pd.DataFrame:
    return pd.DataFrame(
        {"lineage": "L", "day": pd.to_datetime(list(days), utc=True), "what": "wf: +job"}
    )


def _cut_fits(rates: list[float], runs_per_day: int = 10) -> dict[int, float]:
    """Log-likelihood of one step before day i, for every i: what the interval is made of."""
    red = [round(r * runs_per_day) for r in rates]
    return {
        i: _binomial_loglik(sum(red[:i]), i * runs_per_day)
        + _binomial_loglik(sum(red[i:]), (len(red) - i) * runs_per_day)
        for i in range(1, len(red))
    }


def test_changepoint_moves_to_a_known_day_within_half_the_penalty():
    # 30 days at 1/10 red, a known job set change on day 31 (05-31), three more days at 1/10,
    # then 4/10 (10 runs a day, 600 runs: a free cut costs 2.5 x log 600 = 16.0, a known one
    # 8.0). Free, the cut lands where the data turn (06-03, gain 38.2); cutting on 05-31 gains
    # 31.9, 6.2 less, under the 8.0 the known day saves, so the cut moves there. A known day
    # further off (05-25) would cost more than it saves: the cut stays on 06-03.
    rates = [0.1] * 33 + [0.4] * 27
    daily = _daily(rates)
    free = changepoints(daily).iloc[0]
    assert free["date"] == pd.Timestamp("2026-06-03", tz="UTC") and free["known_change"] == ""
    assert free["gain"] == pytest.approx(38.16, abs=0.01)
    moved = changepoints(daily, known=_known("2026-05-31")).iloc[0]
    assert moved["date"] == pd.Timestamp("2026-05-31", tz="UTC")
    assert moved["gain"] == pytest.approx(31.94, abs=0.01) and moved["known_change"] == "wf: +job"
    # Its interval: every day where a step fits at least as well as on 05-31, less 1.92. The
    # data's own best day (06-03) is in it, so the discount never narrows it.
    fits = _cut_fits(rates)
    inside = [i for i, fit in fits.items() if fit >= fits[30] - 1.92]
    assert inside == list(range(29, 36))
    assert (moved["date_low"], moved["date_high"]) == (
        pd.Timestamp("2026-05-30", tz="UTC"),
        pd.Timestamp("2026-06-05", tz="UTC"),
    )
    stays = changepoints(daily, known=_known("2026-05-25")).iloc[0]
    assert stays["date"] == free["date"] and stays["known_change"] == ""


def test_a_known_days_interval_takes_in_the_days_the_data_prefer():
    # 1/10 red for 20 days, a two-day burst at 5/10 (05-21, 05-22: a known job set change on
    # 05-21), 1/10 for four days, then 5/10. The data's best single step is 05-27; the known
    # day fits 3.8 worse, within its 7.7 discount, so the cut is on 05-21. Days 05-26..05-28
    # fit better than 05-21 does, 05-22..05-25 worse: the interval spans them all, 05-21..05-28.
    rates = [0.1] * 20 + [0.5] * 2 + [0.1] * 4 + [0.5] * 20
    fits = _cut_fits(rates)
    assert max(fits, key=fits.get) == 26
    assert [i for i, fit in fits.items() if fit >= fits[20] - 1.92] == [20, 25, 26, 27]
    found = changepoints(_daily(rates), known=_known("2026-05-21")).iloc[0]
    assert found["date"] == pd.Timestamp("2026-05-21", tz="UTC")
    assert (found["date_low"], found["date_high"]) == (
        pd.Timestamp("2026-05-21", tz="UTC"),
        pd.Timestamp("2026-05-28", tz="UTC"),
    )
    assert changepoints(_daily(rates)).iloc[0]["date"] == pd.Timestamp("2026-05-27", tz="UTC")


@pytest.mark.slow
def test_known_days_make_no_changepoint_without_a_step():
    # 200 series of a constant red rate (0.1-0.5, ~4 runs a day for 300 days), each with 60
    # known days (a job set changing every 5 days, like fakehub's trtllm workflow): none gets
    # a cut (a cut on a known day still needs a gain of 1.25 x log(runs), ~8.9 here: a
    # likelihood-ratio statistic of 17.8, p ~ 2e-5 for one day, ~1.5e-3 for 60).
    rng = np.random.default_rng(7)
    days = pd.date_range("2026-01-01", periods=300, freq="D", tz="UTC")
    cut = 0
    for _ in range(200):
        runs = np.maximum(rng.poisson(4, len(days)), 1)
        red = rng.binomial(runs, rng.uniform(0.1, 0.5))
        daily = pd.DataFrame({"lineage": "L", "day": days, "runs": runs, "red": red})
        known = _known(*pd.DatetimeIndex(rng.choice(days[1:], 60, replace=False)).strftime("%F"))
        cut += not changepoints(daily, known=known).empty
    assert cut == 0


def test_known_days_on_the_edges_of_a_series_label_no_cut():
    # A known day before the series or on its first day cannot start a segment, one after it
    # holds no runs; a known day between two days with runs (05-21 has none) counts for the
    # next one, which the cut takes, with its label.
    daily = _daily([0.1] * 20 + [0.6] * 20).drop(index=20)
    known = _known("2026-04-01", "2026-05-01", "2026-05-21", "2026-07-01")
    found = changepoints(daily, known=known)
    assert found["date"].tolist() == [pd.Timestamp("2026-05-22", tz="UTC")]
    assert found["known_change"].tolist() == ["wf: +job"]


def test_job_set_changes_from_daily_presence():
    # Lineage L, 05-01..05-12. old.yml runs 05-01..05-08 (2 runs a day): build every day but
    # 05-02 (a one-day skip, not a change), a matrix test on py3.10 and py3.11 every day and
    # on py3.12 from 05-05 (a leg more: a change), gpu from 05-04 but skipped on 05-05 (dated
    # 05-04 all the same). new.yml runs 05-07..05-12. nightly.yml runs from 05-02, one day
    # after its lineage's first: a backfill's edge, not a start. other.yml is not in L. The
    # lineage's own first day and the day after its last are its edges, not changes.
    rows, totals = [], []
    for offset in range(12):
        d = pd.Timestamp("2026-05-01", tz="UTC") + pd.Timedelta(days=offset)
        if offset < 8:
            totals += [("old.yml", d, "success", 1), ("old.yml", d, "failure", 1)]
            names = ["test (py3.10)", "test (py3.11)"] + ["test (py3.12)"] * (offset >= 4)
            names += ["build"] * (offset != 1) + ["gpu"] * (offset >= 3 and offset != 4)
            rows += [("old.yml", d, name, 2) for name in names]
        if offset >= 6:
            totals.append(("new.yml", d, "success", 2))
            rows.append(("new.yml", d, "e2e", 2))
        if offset >= 1:
            totals.append(("nightly.yml", d, "success", 1))
            rows.append(("nightly.yml", d, "nightly", 1))
        totals.append(("other.yml", d, "success", 1))
        rows.append(("other.yml", d, "lint" if offset < 6 else "fmt", 1))
    presence = pd.DataFrame(rows, columns=["workflow_path", "day", "name", "runs"])
    run_days = pd.DataFrame(totals, columns=["workflow_path", "day", "conclusion", "runs"])
    lineage_of = {"old.yml": "L", "new.yml": "L", "nightly.yml": "L"}
    found = job_set_changes(presence, run_days, lineage_of)
    assert found.assign(day=found["day"].dt.strftime("%m-%d")).values.tolist() == [
        ["L", "05-04", "old.yml: +gpu"],
        ["L", "05-05", "old.yml: +test (py3.12)"],
        ["L", "05-07", "new.yml: first run"],
        ["L", "05-09", "old.yml: stopped"],
    ]
    # Hold 1: the skips count, both ways, and one day of the lineage before nightly.yml will do.
    held_once = job_set_changes(presence, run_days, lineage_of, hold=1)
    assert held_once["what"].tolist()[:4] == [
        "nightly.yml: first run; old.yml: -build",
        "old.yml: +build",
        "old.yml: +gpu",
        "old.yml: -gpu, +test (py3.12)",
    ]
    # Runs whose jobs are unknown still start and stop; no runs at all, no change.
    no_jobs = job_set_changes(presence.iloc[:0], run_days, lineage_of)
    assert no_jobs["what"].tolist() == ["new.yml: first run", "old.yml: stopped"]
    assert job_set_changes(presence.iloc[:0], run_days.iloc[:0], lineage_of).empty


def test_daily_failures_and_nearest_event():
    runs = runs_frame(
        [
            {"run_id": 1, "created_at": day(0.2), "conclusion": "x"},
            {"run_id": 2, "created_at": day(0.7), "conclusion": "x"},
            {"run_id": 3, "created_at": day(1.1), "conclusion": "x"},
        ]
    ).assign(lineage="L", logical_outcome=["fail", "flaky", "excluded"])
    daily = daily_failures(runs)
    assert daily[["runs", "red"]].values.tolist() == [[2, 2]]
    found = changepoints(_daily([0.5] * 20 + [0.0] * 20))
    events = event_table(
        [
            _Event(pd.Timestamp("2026-05-19T12:00Z"), lineages=("L",), pr=1),
            _Event(pd.Timestamp("2026-05-21T06:00Z"), lineages=("other",), pr=2),
            _Event(pd.Timestamp("2026-06-20T00:00Z"), pr=3),
        ]
    )
    near = nearest_events(found, events).iloc[0]
    assert near["event_pr"] == 1 and near["distance_days"] == pytest.approx(1.5)


def test_repair_times_and_mttr():
    runs = runs_frame(
        [{"run_id": i, "created_at": day(i), "conclusion": "x"} for i in range(1, 8)]
    ).assign(logical_outcome=["pass", "fail", "fail", "excluded", "flaky", "fail", "fail"])
    streaks = repair_times(runs)
    assert streaks["red_run_id"].tolist() == [2, 6]
    assert streaks["green_run_id"].tolist()[0] == 5
    assert streaks["hours"].tolist()[0] == pytest.approx(72.0)
    assert math.isnan(streaks["hours"].tolist()[1])
    summary = mttr(streaks).iloc[0]
    assert (summary["mttr_hours"], summary["repaired"], summary["open"]) == (72.0, 1, 1)


def test_timing_percentiles():
    jobs = jobs_frame([(i, 1, 1, "j", "success", "r", m) for i, m in enumerate([10, 20, 30])])
    out = timing(jobs, ["name"]).iloc[0]
    assert out["duration_p50_min"] == pytest.approx(20)
    assert out["duration_p95_min"] == pytest.approx(29)
    assert out["queue_p50_min"] == pytest.approx(1)


def test_devices_and_retry_tax():
    jobs = jobs_frame(
        [
            (1, 1, 1, "j", "failure", "L20x8", 30),
            (2, 1, 2, "j", "success", "L20x8", 30),
            (3, 1, 2, "k", "success", "linux-aarch64-a3-8", 60),
            (4, 1, 2, "h", "success", "ubuntu-latest", 60),
        ]
    )
    jobs.loc[3, "labels"] = []
    jobs.loc[3, "runner_name"] = "GitHub Actions 12"
    named = jobs_frame([(5, 1, 2, "n", "success", "vemlp-l20x8-ab1cd-runner", 6)])
    named.loc[0, "labels"] = []
    assert devices(jobs).tolist() == [8, 8, 8, 0]
    assert devices(named).tolist() == [8]
    tax = retry_tax(jobs, ["run_id"]).iloc[0]
    assert (tax["rerun_jobs"], tax["rerun_minutes"]) == (3, 150)
    assert tax["accelerator_hours"] == pytest.approx((30 * 8 + 60 * 8) / 60)


def test_health_table_puts_repair_retry_tax_and_timing_side_by_side():
    runs = runs_frame(
        [{"run_id": i, "created_at": day(i), "conclusion": "x"} for i in range(1, 5)]
    ).assign(logical_outcome=["pass", "fail", "pass", "pass"])
    attempts = jobs_frame(
        [
            (1, 1, 1, "j", "success", "L20x8", 10),
            (2, 2, 1, "j", "failure", "L20x8", 30),
            (3, 2, 2, "j", "failure", "L20x8", 30),
            (4, 3, 1, "j", "success", "ubuntu-latest", 20),
        ]
    ).assign(workflow_path=".github/workflows/a.yml")
    row = health_table(runs, attempts, ["workflow_path"]).iloc[0]
    assert list(health_table(runs, attempts, ["workflow_path"]).columns[1:]) == HEALTH_COLUMNS
    assert (row["median_repair_hours"], row["repaired"], row["open"]) == (24.0, 1, 0)
    assert (row["rerun_jobs"], row["accelerator_hours"]) == (1, pytest.approx(30 * 8 / 60))
    assert row["jobs"] == 4 and row["duration_p50_min"] == pytest.approx(25)
    assert row["queue_p50_min"] == pytest.approx(1)
    # without the attempts: the time to repair alone, the same numbers
    repair = health_table(runs, None, ["workflow_path"])
    assert list(repair.columns[1:]) == REPAIR_COLUMNS
    assert repair.iloc[0][REPAIR_COLUMNS].tolist() == row[REPAIR_COLUMNS].tolist()


def test_coverage_diff_of_counted_jobs_is_that_of_the_jobs():
    """The derived path's rows: per workflow and job, n counted jobs at their last time."""
    jobs, events = _coverage_jobs(), event_table([_Event(day(10))])
    keys = ["workflow_path", "lineage", "logical_job"]
    counted = jobs.groupby(keys).agg(n=("run_id", "size"), created_at=("created_at", "max"))
    counted = counted.reset_index().assign(run_id=float("nan"))
    by_rows = coverage_diff(jobs, events, RENAMES, window_days=14)
    by_counts = coverage_diff(counted, events, RENAMES, window_days=14)
    columns = ["logical_job", "status", "before_runs", "last_workflow_path", "last_run_at"]
    assert by_counts[columns].values.tolist() == by_rows[columns].values.tolist()
    assert set(by_counts["status"]) == {"kept", "lost", "added"}


@pytest.fixture
def no_pandas_grouping(monkeypatch: pytest.MonkeyPatch):
    """Refuses, once called, pandas' groupby, merge and sort_values: what cost the Migrations
    page's coverage and first runs 40 ms for a few hundred rows, and the Overview's
    changepoints 15 ms (#49)."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pandas groupby, merge or sort on a path that groups in numpy")

    def refuse() -> None:
        for owner in (pd.DataFrame, pd.Series):
            for method in ("groupby", "merge", "sort_values"):
                if hasattr(owner, method):
                    monkeypatch.setattr(owner, method, refused)

    return refuse


def test_coverage_diff_groups_in_numpy_with_the_last_known_address(no_pandas_grouping):
    """The last run before is by time then run id; its address the last one known (the very
    last run has none); two events on one day alternate, in their order, job by job."""
    jobs = _coverage_jobs()
    late = jobs.iloc[[2]].assign(run_id=9, html_url=None)  # trt's job again, later, no address
    jobs = pd.concat([jobs.assign(html_url="u" + jobs["run_id"].astype(str)), late])
    jobs = jobs.assign(created_at=jobs["created_at"].where(jobs["run_id"] != 9, day(7)))
    events = event_table([_Event(day(10)), _Event(day(10), pr=8)])
    no_pandas_grouping()
    lost = lost_jobs(coverage_diff(jobs, events, RENAMES, window_days=14)).set_index(
        ["event_pr", "logical_job"]
    )
    row = lost.loc[(7357, "trtllm_async_unit_tests")]
    assert (row["before_runs"], row["last_run_at"], row["last_run_url"]) == (2, day(7), "u2")
    assert lost.index.get_level_values("event_pr").tolist() == [7357, 8] * 3


def test_successor_first_runs_pick_by_position(no_pandas_grouping):
    runs = runs_frame(
        [
            {"run_id": 4, "created_at": day(11), "workflow_path": "new.yml"},
            {"run_id": 3, "created_at": day(11), "workflow_path": "new.yml"},  # same time: id
            {"run_id": 5, "created_at": day(12), "workflow_path": "new.yml"},
            {"run_id": 1, "created_at": day(0), "workflow_path": "old.yml"},
        ]
    ).assign(logical_outcome=["pass", "fail", "pass", "pass"], failure_category=None)
    born = pd.Series({"new.yml": day(11), "old.yml": day(0)})
    events = event_table([_Event(day(10)), _Event(day(11), pr=None)])
    no_pandas_grouping()
    strips = successor_first_runs(runs, events, first_runs=2, window_days=14, born=born)
    assert strips["logical_outcome"].tolist() == ["fail", "pass"] * 2  # run 3, then 4
    assert strips["order"].tolist() == [1, 2, 1, 2]
    # an event without a pull request: the column holds objects, as one frame per event made
    assert strips["event_pr"].tolist()[:2] == [7357, 7357] and strips["event_pr"].dtype == object


def test_changepoints_of_counts_group_in_numpy_per_lineage(no_pandas_grouping):
    """The Overview's changepoints from counts (daily_red, then changepoints) group in numpy:
    each lineage's days summed over its outcomes and workflows, its series cut on its own, in
    the order of the lineages, its known days its own; excluded runs and a count without a
    lineage left out, the rows in any order (#49: pandas per lineage cost more than the
    search)."""
    rates = {"L": [0.1] * 20 + [0.6] * 20, "A": [0.5] * 15 + [0.0] * 25}
    rows = []
    for lineage, series in rates.items():
        for index, (when, red) in enumerate(zip(_daily(series)["day"], series, strict=True)):
            runs = {"pass": 10 - round(red * 10), "fail": round(red * 10)}
            rows += [  # two workflows of the lineage share its days
                (lineage, when, outcome, n)
                for _ in ("a.yml", "b.yml")
                for outcome, n in runs.items()
                if n
            ]
            rows += [(lineage, when, "excluded", 3), (None, when, "fail", 9)][: 1 + (index < 3)]
    counts = pd.DataFrame(rows[::-1], columns=["lineage", "day", "logical_outcome", "runs"])
    known = pd.concat([_known("2026-05-21"), _known("2026-05-14").assign(lineage="A")])
    no_pandas_grouping()
    daily = daily_red(counts)
    assert daily["lineage"].tolist() == ["A"] * 40 + ["L"] * 40
    assert daily["runs"].unique().tolist() == [20] and daily["day"][:40].is_monotonic_increasing
    found = changepoints(daily, known=known)
    assert found["lineage"].tolist() == ["A", "L"]
    assert found["date"].dt.strftime("%m-%d").tolist() == ["05-16", "05-21"]
    assert found["known_change"].tolist() == ["", "wf: +job"]
    assert found[["before_runs", "after_runs"]].values.tolist() == [[300, 500], [400, 400]]
