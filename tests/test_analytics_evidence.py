"""How much of a category mix is known (analytics.evidence), per event side
(analytics.before_after.basis_mix) and per stage (reports.failure_tables.unknown_by_stage)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pandas as pd
import pytest

from analytics.before_after import basis_mix, category_shift
from analytics.config_tables import event_table
from analytics.evidence import (
    BASES,
    LOG_EXPIRED,
    NO_LOG,
    NO_RULE,
    describe,
    failure_basis,
    known_share,
    shares,
    unknown_reason,
)
from reports.failure_tables import NO_STEP, unknown_by_stage
from tests.support.analytics_frames import day, runs_frame
from tests.support.settings import ANALYSIS

# (category, evidence, log_status) -> basis
CASES = [
    ("oom", "log", "ok", "log"),
    ("timeout", "annotations", "expired", "annotations"),
    ("npu_env", "job", "missing", "job"),
    ("ci_config", "job", None, "job"),
    ("unknown", "none", "expired", LOG_EXPIRED),
    ("unknown", "none", "ok", NO_RULE),
    ("unknown", "none", "missing", NO_LOG),
    ("unknown", "none", "error", NO_LOG),
    ("unknown", "none", None, NO_LOG),
    ("oom", "none", "expired", LOG_EXPIRED),  # no evidence: unknown whatever the category says
    ("unknown", "log", "ok", NO_RULE),  # an unknown category is never known
]


def _bases(counts: dict[str, int]) -> pd.Series:
    return pd.Series([basis for basis, n in counts.items() for _ in range(n)], dtype=object)


def test_failure_basis_of_each_case():
    frame = pd.DataFrame(
        [case[:3] for case in CASES], columns=["category", "evidence", "log_status"]
    )
    assert failure_basis(frame).tolist() == [case[3] for case in CASES]


def test_shares_follow_the_order_of_bases_and_leave_out_empty_ones():
    table = shares(_bases({NO_LOG: 1, "job": 2, LOG_EXPIRED: 3, "log": 4}))
    assert table["basis"].tolist() == ["log", "job", LOG_EXPIRED, NO_LOG]
    assert [BASES.index(b) for b in table["basis"]] == sorted(
        BASES.index(b) for b in table["basis"]
    )
    assert table["failures"].tolist() == [4, 2, 3, 1]
    assert table["share"].sum() == pytest.approx(1.0)
    assert shares(pd.Series([], dtype=object)).empty


def test_describe_wording():
    mix = _bases({"log": 12, "annotations": 35, "job": 10, LOG_EXPIRED: 40, NO_RULE: 3})
    assert describe(mix) == (
        "category from the log 12%, from annotations 35%, from job facts 10%, unknown 43% "
        "(logs expired 40%, log read, no rule matched 3%); n=100 failures"
    )
    assert describe(_bases({"annotations": 2, LOG_EXPIRED: 3})) == (
        "category from annotations 40%, unknown 60% (logs expired 60%); n=5 failures"
    )
    assert describe(_bases({LOG_EXPIRED: 1})) == (
        "category unknown 100% (logs expired 100%); n=1 failure"
    )
    assert describe(_bases({"job": 2, NO_LOG: 2})) == (
        "category from job facts 50%, unknown 50% (no log 50%); n=4 failures"
    )
    assert describe(pd.Series(["log", None, math.nan], dtype=object)) == (
        "category from the log 100%; n=1 failure"
    )
    assert describe(pd.Series([], dtype=object)) == "no failures"


def test_known_share():
    assert known_share(_bases({"log": 1, "job": 1, LOG_EXPIRED: 2})) == pytest.approx(0.5)
    assert known_share(pd.Series(["annotations", None], dtype=object)) == 1.0
    assert math.isnan(known_share(pd.Series([], dtype=object)))


def test_unknown_reason():
    assert unknown_reason("installing", LOG_EXPIRED) == (
        "unknown: failed while installing, log expired"
    )
    assert unknown_reason("testing", NO_RULE) == (
        "unknown: failed while testing, log read, no rule matched"
    )
    assert unknown_reason("setting up the job", NO_LOG) == (
        "unknown: failed while setting up the job, no log"
    )
    assert unknown_reason(None, LOG_EXPIRED) == "unknown: log expired"
    assert unknown_reason(math.nan, NO_LOG) == "unknown: no log"  # a missing stage from pandas
    assert unknown_reason("testing", "annotations") == ""
    assert unknown_reason(None, "log") == ""


def test_unknown_by_stage():
    failures = pd.DataFrame(
        {
            "stage": ["installing", "installing", None, "testing", "testing", "testing"],
            "basis": [LOG_EXPIRED, LOG_EXPIRED, NO_LOG, NO_RULE, "log", None],
            "failures": [1, 1, 1, 1, 1, 1],
        }
    )
    table = unknown_by_stage(failures)
    assert list(table.columns) == ["stage", "basis", "failures"]
    assert table.values.tolist() == [
        ["installing", LOG_EXPIRED, 2],
        [NO_STEP, NO_LOG, 1],
        ["testing", NO_RULE, 1],
    ]


# ---- per event side -------------------------------------------------------------------------


class _Event:
    def __init__(self, when: datetime, title: str, lineages: tuple[str, ...] | None):
        self.date, self.title, self.pr, self.kind, self.lineages = (
            when,
            title,
            None,
            "fix",
            lineages,
        )


EVENT_AT = datetime(2026, 6, 11, tzinfo=UTC)  # = day(10)
# Per lineage, the runs of days 0..19 as (outcome, category, basis); days 0..9 are before.
BEFORE = {
    "L": [("fail", "oom", "annotations"), ("fail", "unknown", LOG_EXPIRED), ("pass", None, None)]
    + [("fail", "unknown", LOG_EXPIRED), ("excluded", None, None)],
    "M": [("flaky", "timeout", "job"), ("pass", None, None)],
}
AFTER = {
    "L": [("fail", "oom", "log"), ("pass", None, None), ("fail", None, None)],
    "M": [("pass", None, None)],
}


def _runs() -> pd.DataFrame:
    rows = []
    for offset, sides in ((0, BEFORE), (10, AFTER)):
        for lineage, runs in sides.items():
            for n, (outcome, category, basis) in enumerate(runs):
                rows.append(
                    {
                        "run_id": len(rows) + 1,
                        "created_at": day(offset + n),
                        "conclusion": "x",
                        "lineage": lineage,
                        "workflow_path": f"{lineage}.yml",  # a workflow has one lineage
                        "logical_outcome": outcome,
                        "failure_category": category,
                        "failure_basis": basis,
                    }
                )
    pr_run = {**rows[0], "run_id": 99, "event": "pull_request", "head_branch": "feature"}
    return runs_frame([*rows, pr_run])


def test_basis_mix_per_lineage_hand_computed():
    events = event_table([_Event(EVENT_AT, "E", ("L", "M"))])
    mix = basis_mix(_runs(), events, ANALYSIS, default_branch="main").set_index("lineage")
    assert mix.loc["L", "before_red"] == 3 and mix.loc["L", "after_red"] == 2
    assert mix.loc["L", "before_basis"] == (
        "category from annotations 33%, unknown 67% (logs expired 67%); n=3 failures"
    )
    assert mix.loc["L", "before_known"] == pytest.approx(1 / 3)
    # the red run with no classified failure counts as unknown, as in the category mix
    assert mix.loc["L", "after_basis"] == (
        "category from the log 50%, unknown 50% (no log 50%); n=2 failures"
    )
    assert mix.loc["M", "before_basis"] == "category from job facts 100%; n=1 failure"
    assert mix.loc["M", "after_red"] == 0 and math.isnan(mix.loc["M", "after_known"])
    assert mix.loc["M", "after_basis"] == "no failures"
    assert mix.loc["L", "event_title"] == "E"


def test_basis_mix_per_event_counts_the_red_runs_of_the_category_mix():
    events = event_table([_Event(EVENT_AT, "E", ("L", "M")), _Event(day(30), "later", None)])
    runs = _runs()
    mix = basis_mix(runs, events, ANALYSIS, per_lineage=False, default_branch="main").set_index(
        "event_title"
    )
    assert "lineage" not in mix.columns and list(mix.index) == ["E", "later"]
    assert mix.loc["E", "before_basis"] == (
        "category from annotations 25%, from job facts 25%, unknown 50% (logs expired 50%); "
        "n=4 failures"
    )
    assert mix.loc["E", "before_known"] == pytest.approx(0.5)
    assert mix.loc["later", "after_red"] == 0 and mix.loc["later", "after_basis"] == "no failures"
    shift = category_shift(runs, events, ANALYSIS, default_branch="main")
    for side in ("before", "after"):
        counted = shift[shift["event_title"] == "E"][f"{side}_count"].sum()
        assert mix.loc["E", f"{side}_red"] == counted
    everything = basis_mix(
        runs, events, ANALYSIS, scope="all", per_lineage=False, default_branch="main"
    ).set_index("event_title")
    assert everything.loc["E", "before_red"] == 5  # the pull-request run counts in scope "all"
