"""analytics.triage: the threshold and tonight's plan (pure, no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from analytics.triage import TriageSettings, plan, recurring, signature_stats

NOW = datetime(2026, 12, 1, tzinfo=UTC)
SETTINGS = TriageSettings(min_failures=3, min_runs=2, window_days=7, quiet_days=14, max_new=2)
LINK_COLUMNS = (
    "signature",
    "source",
    "issue_number",
    "state",
    "state_reason",
    "closed_at",
    "closed_by",
    "set_by",
    "body_sha256",
)


def failures(*rows: tuple[str, int, float, str | None]) -> pd.DataFrame:
    """(signature, run_id, days before NOW, line) per failure."""
    return pd.DataFrame(
        [
            {
                "signature": sig,
                "run_id": run,
                "created_at": pd.Timestamp(NOW - timedelta(days=days)),
                "category": "oom",
                "line": line,
            }
            for sig, run, days, line in rows
        ]
    )


def links(*rows: dict[str, object]) -> pd.DataFrame:
    base = dict.fromkeys(LINK_COLUMNS)
    base.update(source="ciflake", set_by="bot", state="open")
    return pd.DataFrame([{**base, **row} for row in rows], columns=list(LINK_COLUMNS))


def test_threshold_counts_failures_and_runs_within_the_window_with_a_line() -> None:
    frame = failures(
        ("a", 1, 1, "L"), ("a", 1, 1, "L"), ("a", 2, 2, "L"),  # 3 failures, 2 runs
        ("b", 3, 1, "L"), ("b", 3, 1, "L"), ("b", 3, 1, "L"),  # 3 failures, 1 run
        ("c", 4, 1, "L"), ("c", 5, 2, "L"), ("c", 6, 9, "L"),  # third outside the window
        ("u", 7, 1, None), ("u", 8, 1, ""), ("u", 9, 1, None), ("u", 10, 1, " "),
    )  # fmt: skip
    stats = signature_stats(frame, NOW, SETTINGS)
    assert set(stats.index) == {"a", "b", "c"}  # "u" has no deciding line
    assert stats.loc["c", "failures"] == 2
    assert list(recurring(stats).index) == ["a"]
    assert stats.loc["a", "first_seen"] == pd.Timestamp(NOW - timedelta(days=2))


def test_files_the_largest_up_to_the_cap_and_the_rest_wait() -> None:
    frame = failures(
        *[("big", run, 1, "L") for run in range(10, 16)],
        *[("mid", run, 1, "L") for run in range(20, 24)],
        *[("small", run, 1, "L") for run in range(30, 33)],
        *[("linked", run, 1, "L") for run in range(40, 50)],
    )
    stats = signature_stats(frame, NOW, SETTINGS)
    tonight = plan(stats, frame, links({"signature": "linked", "source": "person"}), NOW, SETTINGS)
    assert [s.signature for s in tonight.file] == ["big", "mid"]
    assert [s.signature for s in tonight.waiting] == ["small"]
    later = plan(stats, frame, links(), NOW, SETTINGS, filed_tonight=2)
    assert later.file == ()
    assert len(later.waiting) == 4


def test_updates_only_issues_whose_counts_changed() -> None:
    frame = failures(("a", 1, 1, "L"), ("b", 2, 1, "L"))
    known = links(
        {"signature": "a", "issue_number": 1, "body_sha256": "old"},
        {"signature": "b", "issue_number": 2, "body_sha256": "same"},
    )
    tonight = plan(
        signature_stats(frame, NOW, SETTINGS),
        frame,
        known,
        NOW,
        SETTINGS,
        digests={"a": "new", "b": "same"},
    )
    assert [(s.signature, s.issue_number) for s in tonight.update] == [("a", 1)]
    assert tonight.file == tonight.close == tonight.reopen == ()


def test_closes_ours_when_quiet_and_never_a_persons() -> None:
    frame = failures(("quiet", 1, 15, "L"), ("busy", 2, 13, "L"), ("theirs", 3, 20, "L"))
    known = links(
        {"signature": "quiet", "issue_number": 1},
        {"signature": "busy", "issue_number": 2},
        {"signature": "theirs", "issue_number": 3, "source": "person"},
        {"signature": "gone", "issue_number": 4},
    )
    tonight = plan(signature_stats(frame, NOW, SETTINGS), frame, known, NOW, SETTINGS)
    assert [s.signature for s in tonight.close] == ["gone", "quiet"]


CLOSED = {"state": "closed", "closed_at": pd.Timestamp(NOW - timedelta(days=5))}


@pytest.mark.parametrize(
    ("closed", "reopened"),
    [
        ({**CLOSED, "state_reason": "completed", "closed_by": "bot"}, True),
        ({**CLOSED, "state_reason": "completed", "closed_by": "alice"}, True),
        ({**CLOSED, "state_reason": "not_planned", "closed_by": "alice"}, False),
        ({**CLOSED, "state_reason": "duplicate", "closed_by": "alice"}, False),
        ({**CLOSED, "state_reason": "not_planned", "closed_by": "bot"}, True),
    ],
)
def test_reopens_ours_when_it_fails_again_unless_a_person_said_not_planned(
    closed: dict[str, object], reopened: bool
) -> None:
    frame = failures(("a", 1, 1, "L"))
    known = links({"signature": "a", "issue_number": 7, **closed})
    tonight = plan(signature_stats(frame, NOW, SETTINGS), frame, known, NOW, SETTINGS)
    assert [s.issue_number for s in tonight.reopen] == ([7] if reopened else [])


def test_no_reopen_without_a_failure_after_the_close_and_persons_links_recur() -> None:
    frame = failures(("a", 1, 6, "L"), ("p", 2, 1, None))
    known = links(
        {"signature": "a", "issue_number": 7, **CLOSED, "state_reason": "completed"},
        {"signature": "p", "issue_number": 9, "source": "person", **CLOSED},
    )
    tonight = plan(signature_stats(frame, NOW, SETTINGS), frame, known, NOW, SETTINGS)
    assert tonight.reopen == ()
    assert [(s.signature, s.issue_number) for s in tonight.recurred] == [("p", 9)]


def test_empty_inputs_plan_nothing() -> None:
    empty = pd.DataFrame(columns=["signature", "run_id", "created_at", "category", "line"])
    tonight = plan(signature_stats(empty, NOW, SETTINGS), empty, links(), NOW, SETTINGS)
    assert tonight.writes == () and tonight.waiting == ()
