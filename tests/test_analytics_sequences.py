"""Sequences on numpy positions (analytics.sequences), and the two walks built on them, time to
repair and job verdicts, which must not depend on the order their rows arrive in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analytics.health import repair_times
from analytics.sequences import continues, neighbours, ordered
from analytics.verdicts import job_verdicts
from tests.support.analytics_frames import day, failures_frame, runs_frame


@pytest.mark.filterwarnings("error")  # no deprecated conversion of times with a zone
def test_ordered_sorts_by_key_values_missing_last_then_time_stably():
    frame = pd.DataFrame(
        {
            "branch": ["main", None, "dev", "main", "dev", "main"],
            "at": [day(3), day(0), day(2), day(1), day(1), day(1)],
        }
    )
    rows, group = ordered(frame, ["branch"], np.arange(len(frame)), ["at"])
    # dev by time, then main by time (the tie at day 1 keeps rows 3 before 5), then the missing
    assert rows.tolist() == [4, 2, 3, 5, 0, 1]
    assert continues(group).tolist() == [False, True, False, True, True, False]
    # Only the rows asked for; ties keep the order they were given in.
    subset, _ = ordered(frame, ["branch"], np.array([5, 0, 3]), ["at"])
    assert subset.tolist() == [5, 3, 0]


def test_neighbours_stay_in_their_sequence():
    previous, following = neighbours(np.array([0, 0, 1, 2, 2, 2]))
    assert previous.tolist() == [-1, 0, -1, -1, 3, 4]
    assert following.tolist() == [1, -1, -1, 4, 5, -1]


def test_continues_and_neighbours_on_nothing():
    assert continues(np.array([], dtype=np.int64)).tolist() == []
    assert [side.tolist() for side in neighbours(np.array([], dtype=np.int64))] == [[], []]


SEQUENCE = [
    ("main", "pass"),
    ("dev", "pass"),
    ("main", "fail"),
    ("dev", "fail"),
    ("main", "fail"),
    ("dev", "excluded"),
    ("main", "pass"),
    ("dev", "fail"),
    (None, "fail"),
]


def _two_branches() -> pd.DataFrame:
    """Runs 1..9 of a.yml, one a day, alternating between main and dev (SEQUENCE): main goes
    red on run 3 and green again on run 7; dev goes red on run 4 and stays red past an
    excluded run; run 9 has no branch at all."""
    frame = runs_frame(
        [
            {"run_id": i + 1, "created_at": day(i), "conclusion": "x", "head_branch": branch}
            for i, (branch, _) in enumerate(SEQUENCE)
        ]
    )
    return frame.assign(logical_outcome=[outcome for _, outcome in SEQUENCE])


def _shuffled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sample(frac=1, random_state=7).set_axis(range(100, 100 + len(frame)))


def test_repair_times_walk_each_branch_apart_in_any_row_order():
    for frame in (_two_branches(), _shuffled(_two_branches())):
        streaks = repair_times(frame).set_index("red_run_id")
        assert streaks.index.tolist() == [4, 3, 9]  # dev, main, then no branch
        assert streaks.loc[3, "green_run_id"] == 7
        assert streaks.loc[3, "hours"] == 4 * 24
        assert pd.isna(streaks.loc[4, "green_run_id"]) and pd.isna(streaks.loc[4, "green_at"])
        assert pd.isna(streaks.loc[9, "hours"])


def test_job_verdicts_find_neighbours_on_their_branch_in_any_row_order():
    jobs = _two_branches().assign(
        logical_job="e2e", last_attempt=1, red_attempt=1.0, red_job_id=np.nan
    )
    for frame in (jobs, _shuffled(jobs)):
        out = job_verdicts(frame, failures_frame([])).set_index("run_id")
        assert out["verdict"].to_dict() == {
            4: "persistent",
            8: "persistent",
            3: "persistent",
            5: "persistent",
            9: "unclassified",
        }
        assert out.loc[8, "evidence"] == "previous run 4 also failed"  # the excluded 6 skipped
        assert out.loc[3, "next_run_id"] == 5 and out.loc[5, "next_run_id"] == 7
        assert out.loc[9, "evidence"] == "no neighbour run"
        assert pd.isna(out.loc[9, "prev_run_id"])
