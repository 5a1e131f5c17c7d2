"""SILENT and RETIRED (analytics.silence) on hand-made frames: cron slots as GitHub reads
them, the three reasons, late scheduled runs, and a retired workflow never SILENT."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from analytics.recent import RETIRED, SILENT, tile_tables
from analytics.silence import (
    DISABLED,
    GONE,
    LATE,
    NOT_FIRING,
    cron_slots,
    silences,
)
from fakehub.catalog import CronEntry
from fakehub.schedule import fire_times
from tests.support.settings import ANALYSIS

SATURDAY = datetime(2026, 11, 7, 12, 0, tzinfo=UTC)
T = pd.Timestamp("2026-11-01T00:00Z")


def test_day_zero_and_seven_of_a_cron_are_sunday_not_monday():
    """APScheduler counts weekdays from Monday; crontab and GitHub from Sunday."""
    sunday = datetime(2026, 11, 8, 3, 0, tzinfo=UTC)
    assert cron_slots("0 3 * * 0", None, SATURDAY, 1) == [sunday]
    assert cron_slots("0 3 * * 7", None, SATURDAY, 1) == [sunday]
    assert cron_slots("0 3 * * SUN", None, SATURDAY, 1) == [sunday]
    assert cron_slots("0 3 * * 5-7", None, SATURDAY, 2) == [
        datetime(2026, 11, 8, 3, 0, tzinfo=UTC),
        datetime(2026, 11, 13, 3, 0, tzinfo=UTC),
    ]
    assert cron_slots("0 3 * * 1-5/2", None, SATURDAY, 3) == [  # mon, wed, fri
        datetime(2026, 11, d, 3, 0, tzinfo=UTC) for d in (9, 11, 13)
    ]


def test_a_cron_fires_in_its_timezone_and_day_of_month_or_week():
    """02:00 in Shanghai is 18:00 UTC the day before; with both a day of the month and a
    day of the week, either one fires (crontab), not both at once."""
    shanghai = cron_slots("0 2 * * *", "Asia/Shanghai", SATURDAY, 1)
    assert [s.astimezone(UTC) for s in shanghai] == [datetime(2026, 11, 7, 18, tzinfo=UTC)]
    either = cron_slots("0 0 13 * 1", None, SATURDAY, 3)  # the 13th, or a Monday
    assert [s.day for s in either] == [9, 13, 16]
    assert cron_slots("61 * * * *", None, SATURDAY, 1) == []
    assert cron_slots("0 3 * * *", "Mars/Olympus", SATURDAY, 1) == []


def _watch(**rows: dict) -> pd.DataFrame:
    base = {
        "state": "active",
        "updated_at": T,
        "created_at": T - pd.Timedelta(days=300),
        "file_present": True,
        "triggers": {"events": ["schedule"], "schedule": [{"cron": "0 4 * * *"}]},
        "last_run_at": T + pd.Timedelta(days=10, hours=4, minutes=3),
        "last_schedule_at": T + pd.Timedelta(days=10, hours=4, minutes=3),
        "lineage": "l",
        "listed": True,
    }
    return pd.DataFrame([{**base, "workflow_path": path, **row} for path, row in rows.items()])


def test_disabled_file_gone_and_not_firing_are_silent_with_their_reason_and_since():
    """A file gone is not SILENT while its runs are not all listed ("unknown", a backfill in
    progress: nothing tells whether a declared change retired it), nor when it never ran."""
    reference = T + pd.Timedelta(days=20)
    watch = _watch(
        disabled={"state": "disabled_inactivity", "updated_at": T + pd.Timedelta(days=12)},
        gone={"file_present": False},
        stopped={},  # last scheduled run on day 10: the slots of days 11.. never ran
        firing={"last_schedule_at": T + pd.Timedelta(days=19, hours=9)},
        unread={"file_present": None, "triggers": None},
        retired={"file_present": False},
        unknown={"file_present": False, "listed": False},
        never={"file_present": False, "last_run_at": pd.NaT, "last_schedule_at": pd.NaT},
    )
    found = silences(watch, {"retired"}, reference).set_index("workflow_path")
    assert set(found.index) == {"disabled", "gone", "stopped"}
    assert found.loc["disabled", "reason"] == DISABLED
    assert found.loc["disabled", "detail"] == "disabled by GitHub for inactivity"
    assert found.loc["disabled", "since"] == T + pd.Timedelta(days=12)
    assert found.loc["gone", "reason"] == GONE
    assert found.loc["gone", "since"] == T + pd.Timedelta(days=10, hours=4, minutes=3)
    assert found.loc["stopped", "reason"] == NOT_FIRING
    assert found.loc["stopped", "since"] == T + pd.Timedelta(days=11, hours=4)
    assert "0 4 * * *" in found.loc["stopped", "detail"]


def test_late_scheduled_runs_are_no_silence_until_two_slots_are_late_past_tolerance():
    """Last run on day 10 at 04:03; the slots of day 11 and 12 at 04:00. At day 12 04:00 + LATE
    the second slot has had its tolerance: SILENT; a minute before, not yet. A scheduled
    workflow never run counts from its creation."""
    watch = _watch(stopped={})
    second = T + pd.Timedelta(days=12, hours=4)
    assert silences(watch, set(), second + LATE - pd.Timedelta(minutes=1)).empty
    assert list(silences(watch, set(), second + LATE)["reason"]) == [NOT_FIRING]
    never = _watch(new={"last_run_at": pd.NaT, "last_schedule_at": pd.NaT, "created_at": T})
    second = T + pd.Timedelta(hours=28)  # day 0 04:00, day 1 04:00
    assert silences(never, set(), second + LATE - pd.Timedelta(minutes=1)).empty
    assert silences(never, set(), second + LATE).loc[0, "since"] == T + pd.Timedelta(hours=4)


def _runs(path: str, lineage: str, days: range) -> list[dict]:
    return [
        {
            "run_id": hash((path, d)) % 10**9,
            "workflow_path": path,
            "lineage": lineage,
            "created_at": T + pd.Timedelta(days=d),
            "event": "schedule",
            "head_sha": f"{d:040x}",
            "logical_outcome": "pass",
            "html_url": None,
        }
        for d in days
    ]


def test_a_silent_workflow_reads_silent_on_its_tile_and_a_retired_one_never_does():
    """The tile says SILENT with its reason and since when, before any other status; a
    retired workflow whose file is gone stays RETIRED; a lineage is SILENT only when all its
    workflows that are not retired are."""
    runs = pd.DataFrame(
        _runs("old.yml", "l", range(0, 30))
        + _runs("new.yml", "l", range(31, 60))
        + _runs("quiet.yml", "q", range(0, 60))
    )
    events = pd.DataFrame(
        {
            "event_date": [T + pd.Timedelta(days=30, hours=12)],
            "event_pr": pd.array([7], dtype="Int64"),
            "event_title": ["move"],
            "event_kind": ["migration"],
            "event_lineages": [None],
        }
    )
    silent = pd.DataFrame(
        {
            "workflow_path": ["old.yml", "quiet.yml"],
            "lineage": ["l", "q"],
            "reason": [GONE, DISABLED],
            "detail": ["gone", "disabled by hand"],
            "since": [T, T + pd.Timedelta(days=59)],
        }
    )
    reference = T + pd.Timedelta(days=60)
    tiles = tile_tables(runs, reference, events, ANALYSIS, recent_days=14, silent=silent)
    tiles = tiles.set_index(["level", "name"])
    assert tiles.loc[("workflow", "old.yml"), "status"] == RETIRED
    assert tiles.loc[("workflow", "quiet.yml"), "status"] == SILENT
    assert tiles.loc[("workflow", "quiet.yml"), "silent_detail"] == "disabled by hand"
    assert tiles.loc[("workflow", "quiet.yml"), "silent_since"] == T + pd.Timedelta(days=59)
    assert tiles.loc[("lineage", "q"), "status"] == SILENT
    assert tiles.loc[("lineage", "l"), "status"] != SILENT  # new.yml goes on


MONDAYS, SUNDAYS = [2, 9, 16, 23, 30], [1, 8, 15, 22, 29]  # of November 2026
DAY_FIELDS = {
    "0 0 * * 0": SUNDAYS,
    "0 0 * * 7": SUNDAYS,
    "0 0 13 * 1": sorted([13, *MONDAYS]),  # neither field starts with `*`: either day
    "0 0 */2 * 1": [9, 23],  # one does: the odd days that are Mondays
    "0 0 1/2 * *": list(range(1, 30, 2)),  # from 1 to the field's max, every other day
    "0 0 * * 1/2": sorted([*MONDAYS, 4, 6, 11, 13, 18, 20, 25, 27, *SUNDAYS]),  # 1,3,5,7
}


def test_both_cron_readers_read_the_day_fields_as_cron_does():
    """analytics.silence (what SILENT expects) and fakehub.schedule (when fakehub's schedules
    fire) agree with Vixie cron: "either day" only when neither day field starts with `*`,
    Sunday as 0 and 7, and `a/n` from a to the field's max."""
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    for cron, days in DAY_FIELDS.items():
        slots = cron_slots(cron, None, start - timedelta(seconds=1), 31)
        assert [s.day for s in slots if s < end] == days, cron
        fired = fire_times(CronEntry(cron), start, end)
        assert [s.day for s in fired] == days, cron
