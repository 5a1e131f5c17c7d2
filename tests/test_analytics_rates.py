"""Rates, Wilson intervals, ranking and before/after on hand-computed tables; properties."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact

from analytics.before_after import before_after, category_shift, fisher_two_sided
from analytics.config_tables import event_table
from analytics.rates import (
    NOT_ENOUGH_DATA,
    outcome_counts,
    rank_by_lower_bound,
    stability,
    verdict_label,
    wilson_interval,
    with_period,
)
from tests.support.analytics_frames import day, runs_frame
from tests.support.settings import ANALYSIS, analysis


def test_wilson_known_values():
    low, high = wilson_interval(np.array([1, 0, 10, 0]), np.array([3, 5, 10, 0]))
    assert low[0] == pytest.approx(0.0615, abs=1e-4)
    assert high[0] == pytest.approx(0.7923, abs=1e-4)
    assert (low[1], high[1]) == (0.0, pytest.approx(0.4345, abs=1e-4))
    assert (low[2], high[2]) == (pytest.approx(0.7225, abs=1e-4), 1.0)
    assert math.isnan(low[3]) and math.isnan(high[3])


def _frame(outcomes: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(key, o) for key, values in outcomes.items() for o in values],
        columns=["workflow_path", "logical_outcome"],
    )


def test_stability_hand_computed():
    table = stability(
        _frame(
            {
                "a": ["pass"] * 6 + ["flaky"] * 2 + ["fail"] * 2 + ["excluded"],
                "b": ["excluded"] * 3,
                "c": ["pass", "fail"],
            }
        ),
        ["workflow_path"],
        ANALYSIS.min_runs,
    ).set_index("workflow_path")
    a = table.loc["a"]
    assert (a["runs"], a["pass"], a["flaky"], a["fail"], a["excluded"]) == (10, 6, 2, 2, 1)
    assert a["success_rate"] == pytest.approx(0.6)
    assert a["eventual_success"] == pytest.approx(0.8)
    assert a["flake_rate"] == pytest.approx(0.25)
    assert bool(a["enough_data"])
    b = table.loc["b"]  # all excluded: no denominator, no rate
    assert b["runs"] == 0 and math.isnan(b["success_rate"]) and math.isnan(b["flake_rate_low"])
    assert not bool(table.loc["c", "enough_data"])
    labels = verdict_label(table.reset_index())
    assert labels[0] == "0.60 [0.31, 0.83] n=10"
    assert labels[2] == f"{NOT_ENOUGH_DATA} (n=2)"


def test_empty_frame_gives_empty_table():
    table = stability(_frame({}), ["workflow_path"], ANALYSIS.min_runs)
    assert table.empty and "success_rate_low" in table.columns


def test_rank_by_lower_bound_puts_small_samples_last_and_breaks_ties_by_n():
    table = stability(
        _frame(
            {
                "tiny": ["flaky", "pass"],
                "big": ["flaky"] * 30 + ["pass"] * 70,
                "bigger_same": ["flaky"] * 60 + ["pass"] * 140,
                "clean": ["pass"] * 50,
            }
        ),
        ["workflow_path"],
        ANALYSIS.min_runs,
    )
    order = rank_by_lower_bound(table, "flake_rate")["workflow_path"].tolist()
    assert order == ["bigger_same", "big", "clean", "tiny"]


def test_with_period_day_and_week():
    frame = pd.DataFrame(
        {"created_at": pd.to_datetime(["2026-06-03T23:59:00Z", "2026-06-07T10:00:00Z"], utc=True)}
    )
    days = with_period(frame, "D")["period"].dt.strftime("%Y-%m-%d").tolist()
    weeks = with_period(frame, "W")["period"].dt.strftime("%Y-%m-%d").tolist()
    assert days == ["2026-06-03", "2026-06-07"]
    assert weeks == ["2026-06-01", "2026-06-01"]  # Monday of the ISO week


@given(
    st.lists(st.sampled_from(["pass", "flaky", "fail", "excluded"]), max_size=60),
    st.lists(st.sampled_from(["x", "y"]), min_size=60, max_size=60),
)
def test_rate_properties(outcomes, keys):
    frame = pd.DataFrame({"k": keys[: len(outcomes)], "logical_outcome": outcomes})
    table = stability(frame, ["k"], ANALYSIS.min_runs)
    assert (table["pass"] + table["flaky"] + table["fail"] == table["runs"]).all()
    assert table["runs"].sum() + table["excluded"].sum() == len(outcomes)
    for rate in ("success_rate", "eventual_success", "flake_rate"):
        defined = table[table[rate].notna()]
        assert defined[rate].between(0, 1).all()
        assert (defined[f"{rate}_low"] <= defined[rate]).all()
        assert (defined[rate] <= defined[f"{rate}_high"]).all()
        assert defined[f"{rate}_low"].between(0, 1).all()
        assert defined[f"{rate}_high"].between(0, 1).all()


@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_estimate(k, n):
    k = min(k, n)
    low, high = wilson_interval(k, n)
    assert 0 <= low <= k / n <= high <= 1


# ---- before / after ----------------------------------------------------------------------


class _Event:
    def __init__(self, when: datetime, pr: int | None, lineages: tuple[str, ...] | None):
        self.date, self.title, self.pr, self.kind, self.lineages = (
            when,
            f"PR {pr}",
            pr,
            "fix",
            lineages,
        )


EVENT_AT = datetime(2026, 6, 11, tzinfo=UTC)  # = day(10)


def _history() -> pd.DataFrame:
    """Lineage L: 10 days before the event (days 0..9) and 10 after (10..19).
    before: pass x4, fail x4 (oom), flaky x1 (oom), excluded x1
    after:  pass x8, fail x1 (network), flaky x1 (oom); plus PR runs that scope excludes."""
    before = ["pass"] * 4 + ["fail"] * 4 + ["flaky", "excluded"]
    after = ["pass"] * 8 + ["fail", "flaky"]
    rows = []
    for i, outcome in enumerate(before + after):
        category = None
        if outcome in ("fail", "flaky"):
            category = "network" if (i >= 10 and outcome == "fail") else "oom"
        rows.append(
            {
                "run_id": i + 1,
                "created_at": day(i),
                "conclusion": "x",
                "logical_outcome": outcome,
                "failure_category": category,
            }
        )
    rows.append(
        {
            "run_id": 99,
            "created_at": day(12),
            "conclusion": "x",
            "logical_outcome": "fail",
            "failure_category": "oom",
            "event": "pull_request",
            "head_branch": "feature",
        }
    )
    return runs_frame(rows).assign(lineage="L")


def test_before_after_hand_computed():
    events = event_table([_Event(EVENT_AT, 1, ("L",))])
    table = before_after(
        _history(), events, analysis(window_days=14, first_runs=3), default_branch="main"
    )
    row = table.iloc[0]
    assert (row["before_runs"], row["before_pass"], row["before_flaky"], row["before_fail"]) == (
        9,
        4,
        1,
        4,
    )
    assert row["before_excluded"] == 1
    assert (row["after_runs"], row["after_pass"], row["after_flaky"], row["after_fail"]) == (
        10,
        8,
        1,
        1,
    )
    assert row["before_success_rate"] == pytest.approx(4 / 9)
    assert row["after_success_rate"] == pytest.approx(0.8)
    assert row["after_flake_rate"] == pytest.approx(1 / 9)
    # scipy's two-sided Fisher on [[4, 5], [8, 2]]
    assert row["p_value"] == pytest.approx(0.1698, abs=1e-4)
    assert (row["first_runs"], row["first_pass"]) == (3, 3)
    assert row["scope"] == "default" and row["window_days"] == 14
    pr = before_after(_history(), events, ANALYSIS, scope="pr", default_branch="main").iloc[0]
    assert (pr["before_runs"], pr["after_runs"], pr["after_fail"]) == (0, 1, 1)
    assert math.isnan(pr["p_value"])
    both = before_after(_history(), events, ANALYSIS, scope="all", default_branch="main").iloc[0]
    assert both["after_runs"] == 11


def test_before_after_window_edges_and_empty_windows():
    events = event_table([_Event(EVENT_AT, None, None)])
    narrow = before_after(_history(), events, analysis(window_days=1), default_branch="main").iloc[
        0
    ]
    # [day 9, day 10) holds run 10 (excluded); [day 10, day 11) holds run 11 (pass)
    assert (narrow["before_runs"], narrow["before_excluded"], narrow["after_runs"]) == (0, 1, 1)
    assert math.isnan(narrow["before_success_rate"]) and math.isnan(narrow["p_value"])
    assert not narrow["before_enough_data"]
    far = event_table([_Event(datetime(2027, 1, 1, tzinfo=UTC), 2, ("L", "unknown"))])
    table = before_after(_history(), far, ANALYSIS, default_branch="main")
    assert table["lineage"].tolist() == ["L", "unknown"]
    assert (table["before_runs"] == 0).all() and (table["after_runs"] == 0).all()
    assert table["p_value"].isna().all()


def test_before_after_all_excluded_window():
    runs = _history()
    runs["logical_outcome"] = "excluded"
    row = before_after(
        runs, event_table([_Event(EVENT_AT, 1, None)]), ANALYSIS, default_branch="main"
    ).iloc[0]
    assert (row["before_runs"], row["after_runs"], row["first_runs"]) == (0, 0, 0)
    assert row["before_excluded"] == 10 and row["after_excluded"] == 10


def test_category_shift_hand_computed():
    events = event_table([_Event(EVENT_AT, 1, ("L",))])
    shift = category_shift(_history(), events, ANALYSIS, default_branch="main").set_index(
        "failure_category"
    )
    assert shift.loc["oom", "before_count"] == 5 and shift.loc["oom", "after_count"] == 1
    assert shift.loc["oom", "before_share"] == pytest.approx(1.0)
    assert shift.loc["oom", "after_share"] == pytest.approx(0.5)
    assert shift.loc["oom", "after_per_run"] == pytest.approx(0.1)
    assert shift.loc["oom", "shift"] == pytest.approx(-0.5)
    assert shift.loc["network", "before_count"] == 0
    assert shift.loc["network", "shift"] == pytest.approx(0.5)


def test_outcome_counts_keeps_all_outcome_columns():
    counts = outcome_counts(_frame({"a": ["pass"]}), ["workflow_path"])
    assert list(counts.columns) == ["workflow_path", "runs", "pass", "flaky", "fail", "excluded"]


@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
@settings(max_examples=300, deadline=None)
def test_fisher_two_sided_equals_scipy(a, b, c, d):
    assume(a + b and c + d)
    expected = fisher_exact([[a, b], [c, d]]).pvalue
    assert fisher_two_sided(a, b, c, d) == pytest.approx(expected, rel=1e-9, abs=1e-12)
