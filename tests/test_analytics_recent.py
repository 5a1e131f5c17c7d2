"""The tiles' "now" (analytics/recent.py) on synthetic histories computed by hand."""

from __future__ import annotations

import pandas as pd

from analytics import staleness
from analytics.config_tables import event_table
from analytics.recent import (
    DOWN,
    RETIRED,
    SPARK,
    UP,
    day_counts,
    failing_unread,
    retirements,
    sparklines,
    tile_table,
    tile_tables,
)
from store.project import EventConfig
from tests.support.settings import ANALYSIS, analysis

START = pd.Timestamp("2025-11-01", tz="UTC")
NEW, OLD, LONE = "new.yml", "old.yml", "lone.yml"


def _runs(rows: list[tuple[str, str, pd.Timestamp, str]], event: str = "push") -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["workflow_path", "lineage", "created_at", "outcome"])
    return pd.DataFrame(
        {
            "run_id": range(1, len(frame) + 1),
            "workflow_path": frame["workflow_path"],
            "lineage": frame["lineage"],
            "created_at": pd.to_datetime(frame["created_at"], utc=True),
            "event": event,  # each on a commit of its own
            "head_sha": [f"{i:040x}" for i in range(1, len(frame) + 1)],
            "logical_outcome": frame["outcome"],
            "html_url": [f"https://github.invalid/runs/{i}" for i in range(1, len(frame) + 1)],
        }
    )


def _daily(path: str, days: range, outcome: str, lineage: str = "l") -> list[tuple]:
    return [(path, lineage, START + pd.Timedelta(days=d, hours=3), outcome) for d in days]


def _events(*events: tuple[str, str, tuple[str, ...] | None]) -> pd.DataFrame:
    return event_table(
        [
            EventConfig(pd.Timestamp(d, tz="UTC").to_pydatetime(), "t", 1, k, ls)
            for d, k, ls in events
        ]
    )


def test_red_for_a_year_then_green_for_two_weeks_is_passing_and_rising():
    runs = _runs(_daily(NEW, range(365), "fail") + _daily(NEW, range(365, 379), "pass"))
    reference = runs["created_at"].max()
    tile = tile_table(runs, "workflow_path", reference, _events(), ANALYSIS, recent_days=14).iloc[0]
    assert tile["status"] == "PASSING" and tile["trend"] == UP
    assert (tile["runs"], tile["pass"], tile["previous_runs"], tile["previous_pass"]) == (
        14,
        14,
        14,
        0,
    )
    assert tile["trend_p"] < 0.05 and tile["label"].endswith("n=14")
    assert tile["last_run_url"].endswith("/379")
    # red then green: 379 days in 24 spans of whole days, the last (days 363-378) with 2 red
    # runs of 16
    assert tile["sparkline"][0] == "█" and SPARK.index(tile["sparkline"][-1]) == 1
    # the same history read a year earlier: all red, no change between the windows, no arrow
    early = tile_table(
        runs[runs["created_at"] < START + pd.Timedelta(days=200)],
        "workflow_path",
        START + pd.Timedelta(days=199, hours=3),
        _events(),
        ANALYSIS,
        recent_days=14,
    ).iloc[0]
    assert early["status"] == "FAILING" and early["trend"] == ""


def test_a_small_change_draws_no_arrow_and_a_drop_draws_one_down():
    calm = _daily(NEW, range(0, 28), "pass")
    calm[20] = (NEW, "l", calm[20][2], "fail")  # one red in the last 14 days
    tile = tile_table(_runs(calm), "workflow_path", None, _events(), ANALYSIS, recent_days=14).iloc[
        0
    ]
    assert tile["status"] == "FLAKY" and tile["trend"] == ""
    drop = _daily(NEW, range(0, 14), "pass") + _daily(NEW, range(14, 28), "fail")
    assert (
        tile_table(_runs(drop), "workflow_path", None, _events(), ANALYSIS, recent_days=14).iloc[0][
            "trend"
        ]
        == DOWN
    )


def test_workflows_a_migration_removed_are_retired_with_their_successor():
    migration = START + pd.Timedelta(days=100)
    runs = _runs(
        _daily(OLD, range(0, 100), "pass")
        + _daily(NEW, range(98, 130), "pass")
        + _daily(LONE, range(0, 100), "pass", lineage="alone")
        + _daily("stopped.yml", range(0, 40), "pass", lineage="other")
    )
    events = _events((str(migration.date()) + "T12:00Z", "migration", None))
    retired = retirements(runs, events).set_index("workflow_path")
    assert set(retired.index) == {OLD, LONE}  # stopped.yml stopped 60 days before: not removed
    assert retired.loc[OLD, "successors"] == NEW and retired.loc[LONE, "successors"] == ""
    tiles = tile_table(
        runs, "workflow_path", runs["created_at"].max(), events, ANALYSIS, recent_days=14
    ).set_index("name")
    assert tiles.loc[OLD, "status"] == RETIRED and tiles.loc[LONE, "status"] == RETIRED
    assert tiles.loc["stopped.yml", "status"] == "STALE" and tiles.loc[NEW, "status"] == "PASSING"
    lineages = tile_table(
        runs, "lineage", runs["created_at"].max(), events, ANALYSIS, recent_days=14
    ).set_index("name")
    # a lineage is retired only with all its workflows: "l" goes on in new.yml
    assert lineages.loc["l", "status"] == "PASSING" and lineages.loc["alone", "status"] == RETIRED
    assert lineages.loc["alone", "successors"] == "" and lineages.loc["other", "status"] == "STALE"


def test_both_levels_at_once_from_runs_in_no_order():
    """tile_tables sorts the runs once and shares them, the retirements and the workflows'
    staleness between the levels: shuffled runs give the hand-computed statuses, each name's
    last run is its newest, and each level equals that level computed alone."""
    migration = START + pd.Timedelta(days=100)
    runs = _runs(
        _daily(OLD, range(0, 100), "pass")
        + _daily(NEW, range(98, 130), "fail")
        + _daily(LONE, range(0, 100), "flaky", lineage="alone")
        + _daily("stopped.yml", range(0, 40), "pass", lineage="other")
    ).sample(frac=1, random_state=7)
    events = _events((str(migration.date()) + "T12:00Z", "migration", None))
    reference = runs["created_at"].max()
    both = tile_tables(runs, reference, events, analysis(min_runs=3), recent_days=10)
    lineages = both[both["level"] == "lineage"].set_index("name")
    workflows = both[both["level"] == "workflow"].set_index("name")
    # "l" goes on in new.yml, which fails; "alone" lost its only workflow; "other" stopped
    assert lineages["status"].to_dict() == {"alone": RETIRED, "l": "FAILING", "other": "STALE"}
    assert workflows["status"].to_dict() == {
        LONE: RETIRED,
        NEW: "FAILING",
        OLD: RETIRED,
        "stopped.yml": "STALE",
    }
    assert workflows.loc[NEW, "runs"] == 10  # the last 10 days, the reference's included
    newest = runs.groupby("workflow_path")["created_at"].max()
    pd.testing.assert_series_equal(
        workflows["last_run"], newest.rename("last_run"), check_names=False
    )
    assert lineages.loc["l", "last_run"] == newest[NEW]
    alone = [
        tile_table(runs, by, reference, events, analysis(min_runs=3), recent_days=10).assign(
            level=level
        )
        for by, level in (("lineage", "lineage"), ("workflow_path", "workflow"))
    ]
    pd.testing.assert_frame_equal(both, pd.concat(alone, ignore_index=True))


def _lines(runs: pd.DataFrame) -> pd.Series:
    first, last = runs["created_at"].min(), runs["created_at"].max()
    return sparklines(day_counts(runs), "workflow_path", first, last)


def test_sparkline_is_the_red_share_per_span():
    runs = _runs(_daily(NEW, range(0, 24), "pass") + _daily(NEW, range(24, 48), "fail"))
    assert _lines(runs)[NEW] == "▁" * 12 + "█" * 12


def test_sparkline_spans_are_whole_days():
    """48 days: two a span, their runs pooled (one red of two: the middle block, numpy's
    round-half-to-even of 3.5); 3 days: each day's block over a third of the spans."""
    two = _runs(_daily(NEW, [0], "fail") + _daily(NEW, range(1, 48), "pass"))
    assert _lines(two)[NEW] == SPARK[4] + "▁" * 23
    three = _runs(_daily(NEW, [0, 1], "fail") + _daily(NEW, [2], "pass"))
    assert _lines(three)[NEW] == "█" * 16 + "▁" * 8


def test_a_range_that_ends_at_midnight_has_no_empty_day_at_its_end():
    """The dashboard's ranges end at a midnight, exclusive: ten days of runs then draw ten
    days, the last span the last day's (an eleventh day, empty, left it blank)."""
    runs = _runs(_daily(NEW, range(10), "pass"))
    until = START + pd.Timedelta(days=10)
    tile = tile_table(runs, "workflow_path", until, _events(), ANALYSIS, recent_days=14).iloc[0]
    assert tile["sparkline"] == "▁" * 24


def test_sparklines_of_several_groups_leave_their_gaps_blank():
    days = _daily(NEW, range(0, 24), "pass") + _daily(OLD, range(0, 6), "fail")
    days += _daily(OLD, range(18, 24), "flaky") + _daily("gone.yml", range(0, 24), "excluded")
    lines = _lines(_runs(days))
    assert lines[NEW] == "▁" * 24
    assert lines[OLD] == "█" * 6 + " " * 12 + "█" * 6  # no run in the middle: blank
    assert "gone.yml" not in lines.index  # nothing counted: no line (the tile shows blanks)


def test_a_quiet_successor_does_not_make_its_lineage_stale():
    migration = START + pd.Timedelta(days=60)
    busy = [(OLD, "l", START + pd.Timedelta(hours=8 * i), "pass") for i in range(180)]
    quiet = [(NEW, "l", migration + pd.Timedelta(days=2 * i), "pass") for i in range(10)]
    runs = _runs(busy + quiet, event="schedule")  # no commits to count: the hours rule
    events = _events((str(migration.date()) + "T00:00Z", "migration", None))
    reference = runs["created_at"].max() + pd.Timedelta(days=2.5)  # less than 3 of its gaps
    lineage = (
        tile_table(runs, "lineage", reference, events, ANALYSIS, recent_days=14)
        .set_index("name")
        .loc["l"]
    )
    assert lineage["status"] != "STALE"  # pooled, the predecessor's 8 h gaps would say STALE
    later = reference + pd.Timedelta(days=5)  # now the successor stopped: 7.5 days > 3 x 2
    assert (
        tile_table(runs, "lineage", later, events, ANALYSIS, recent_days=14)
        .set_index("name")
        .loc["l", "status"]
        == "STALE"
    )


def test_lineage_tiles_count_commit_gaps_of_their_workflows_alone(monkeypatch):
    """A lineage's STALE is its workflows' (analytics.recent), so its tile reads only its gaps
    in hours (staleness.usual_gaps, the same numbers staleness gives): the commits, the cost
    that grows with every run, are counted once, per workflow."""
    runs = _runs(
        _daily(OLD, range(0, 60), "pass") + _daily(NEW, range(0, 60, 2), "pass", lineage="k")
    )
    reference = runs["created_at"].max() + pd.Timedelta(days=1)
    expected = staleness.staleness(runs, "lineage", reference, 3.0).set_index("lineage")
    pd.testing.assert_frame_equal(
        staleness.usual_gaps(runs, "lineage", reference),
        expected[["last_run_at", "usual_gap_hours", "gaps", "silent_hours"]],
    )
    counted = []
    commit_gaps = staleness._commit_gaps
    monkeypatch.setattr(
        staleness, "_commit_gaps", lambda *a: counted.append(a[1]) or commit_gaps(*a)
    )
    tiles = tile_tables(runs, reference, _events(), ANALYSIS, recent_days=14)
    assert counted == ["workflow_path"]
    lineages = tiles[tiles["level"] == "lineage"].set_index("name")
    assert lineages["usual_gap_hours"].to_dict() == {"k": 48.0, "l": 24.0}
    assert lineages["silent_hours"].to_dict() == {"k": 48.0, "l": 24.0}


def _failing_history(before: str) -> pd.DataFrame:
    """NEW's runs: passes, one ``before`` on day 21, cancelled runs (excluded) until day 58,
    one failure on day 59; a second workflow of the lineage, OLD, read in full. The outcomes
    of the runs before the tiles' windows are not read, as store.overview_counts.tile_runs
    leaves them."""
    days = _daily(NEW, range(21), "pass") + _daily(NEW, [21], before)
    days += _daily(NEW, range(22, 59), "excluded") + _daily(NEW, [59], "fail")
    days += _daily(OLD, range(50, 60), "pass", lineage="other")
    runs = _runs(days)
    windows = runs["created_at"].max() - pd.Timedelta(days=29)
    unread = runs["created_at"] <= windows
    return runs.assign(logical_outcome=runs["logical_outcome"].mask(unread))


def test_a_status_that_hangs_on_a_run_before_the_windows_names_its_workflow():
    runs = _failing_history("fail")
    assert failing_unread(runs) == [NEW]  # OLD read two and more: its two latest are known
    whole = _runs(_daily(NEW, range(10), "pass"))
    assert failing_unread(whole) == []


def test_failing_reads_the_latest_counted_run_before_the_windows():
    """NEW's two latest counted runs are days 59 and 21: FAILING when both failed, once the
    older one's outcome is read (reports.overview_tables fills it in from latest_counted)."""
    for before, status in (("fail", "FAILING"), ("pass", "FLAKY")):
        runs = _failing_history(before)
        day_21 = runs["created_at"] == START + pd.Timedelta(days=21, hours=3)
        filled = runs.assign(logical_outcome=runs["logical_outcome"].mask(day_21, before))
        reference = runs["created_at"].max()
        tiles = tile_table(filled, "workflow_path", reference, _events(), ANALYSIS, recent_days=14)
        assert tiles.set_index("name").loc[NEW, "status"] == status
