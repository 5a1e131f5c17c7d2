"""The one definition of each shared concept (docs/vocabulary.md), on small hand-computed
tables: STALE (analytics.staleness), NEW (analytics.newness), a successor's first runs
(analytics.successors), works-elsewhere (analytics.elsewhere) and failures by environment
(analytics.environments). tests/test_concepts_agree.py checks that the dashboard and the
summary give the same answers through them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analytics.elsewhere
from analytics.elsewhere import failed_elsewhere, works_elsewhere
from analytics.environments import environment_failures
from analytics.newness import NEW_DAYS, is_new
from analytics.staleness import COMMITS, HOURS, MIN_GAPS, NO_VERDICT, OK, STALE, staleness
from analytics.successors import successor_first_runs
from tests.support.analytics_frames import day, failures_frame, runs_frame


def _daily(path: str, days: list[float]) -> list[dict]:
    return [
        {"run_id": hash((path, n)) % 10**9, "created_at": day(n), "workflow_path": path}
        for n in days
    ]


def test_stale_after_three_usual_gaps_of_silence_before_the_reference():
    """Scheduled runs: nothing better is known than the gaps in hours."""
    runs = runs_frame(_daily("a.yml", [0, 1, 2, 3, 4]) + _daily("b.yml", [0, 1])).assign(
        conclusion="x", event="schedule"
    )
    out = staleness(runs, "workflow_path", day(4) + pd.Timedelta(days=2), 3.0)
    status = dict(zip(out["workflow_path"], out["status"], strict=True))
    assert status == {"a.yml": OK, "b.yml": NO_VERDICT}  # b: 1 gap < MIN_GAPS
    row = out.set_index("workflow_path").loc["a.yml"]
    assert (row["usual_gap_hours"], row["gaps"], row["silent_hours"]) == (24.0, 4, 48.0)
    late = staleness(runs, "workflow_path", day(4) + pd.Timedelta(hours=73), 3.0)
    assert late.set_index("workflow_path").loc["a.yml", "status"] == STALE
    assert late.set_index("workflow_path").loc["b.yml", "status"] == NO_VERDICT
    assert MIN_GAPS == 3
    assert set(late["rule"]) == {HOURS}


def _pushes(shas: dict[str, list[int]]) -> pd.DataFrame:
    """Push runs: per workflow, the commits (numbered in push order, an hour apart) it ran on."""
    rows = [
        {"run_id": 100 * n + i, "created_at": day(n / 24), "workflow_path": path}
        | {"head_sha": f"{n:040x}"}
        for i, (path, commits) in enumerate(shas.items())
        for n in commits
    ]
    return runs_frame(rows)


def test_a_push_driven_workflow_is_stale_in_missed_commits_not_in_quiet_hours():
    """The demo's false alarm: a.yml runs on every commit its siblings run on, then the
    night is quiet. Counted in commits, it missed none: OK at any hour. When b.yml goes on
    through 4 commits without it (more than 3 x its usual gap of one commit): STALE."""
    runs = _pushes({"a.yml": list(range(6)), "b.yml": list(range(6))})
    night = staleness(runs, "workflow_path", day(6 / 24) + pd.Timedelta(hours=40), 3.0)
    row = night.set_index("workflow_path").loc["a.yml"]
    assert (row["rule"], row["usual_gap_commits"], row["missed_commits"]) == (COMMITS, 1.0, 0)
    assert row["silent_hours"] == 40 + 1  # 41 hours: the hours rule (3 x 1 h) would say STALE
    assert row["status"] == OK and row["gaps"] == 5
    three = _pushes({"a.yml": list(range(6)), "b.yml": list(range(9))})
    four = _pushes({"a.yml": list(range(6)), "b.yml": list(range(10))})
    moments = day(10 / 24)
    assert staleness(three, "workflow_path", moments, 3.0).iloc[0]["status"] == OK
    row = staleness(four, "workflow_path", moments, 3.0).set_index("workflow_path").loc["a.yml"]
    assert (row["missed_commits"], row["status"]) == (4, STALE)


def test_a_path_filtered_workflow_is_measured_against_its_own_share_of_commits():
    """a.yml runs on every third commit (its paths): 5 commits without it is its usual
    rhythm, 7 are not yet 3 x 3, 10 are."""
    a = list(range(0, 13, 3))  # 0, 3, ..., 12
    for last, status in ((17, OK), (21, OK), (22, STALE)):
        runs = _pushes({"a.yml": a, "b.yml": list(range(last + 1))})
        row = staleness(runs, "workflow_path", day(1), 3.0).set_index("workflow_path")
        assert (row.loc["a.yml", "usual_gap_commits"], row.loc["a.yml", "status"]) == (3.0, status)


def test_stale_without_a_reference_says_nothing_and_lineages_pool_their_workflows():
    runs = runs_frame(_daily("a.yml", [0, 2]) + _daily("b.yml", [1, 3])).assign(
        conclusion="x", lineage="L", event="schedule"
    )
    assert set(staleness(runs, "workflow_path", None, 3.0)["status"]) == {NO_VERDICT}
    pooled = staleness(runs, "lineage", day(3) + pd.Timedelta(days=4), 3.0).iloc[0]
    assert (pooled["gaps"], pooled["usual_gap_hours"], pooled["status"]) == (3, 24.0, STALE)


def test_new_when_first_seen_within_new_days_before_the_end():
    end = pd.Timestamp("2026-07-01T00:00Z")
    first = pd.Series(
        [
            end - pd.Timedelta(days=NEW_DAYS),  # the first moment of the window: new
            end - pd.Timedelta(days=NEW_DAYS, seconds=1),  # just before it: not new
            end - pd.Timedelta(hours=1),
            pd.NaT,  # never seen: not new
        ]
    )
    assert is_new(first, end).tolist() == [True, False, True, False]
    assert NEW_DAYS == 21


def _event_table(when: pd.Timestamp) -> pd.DataFrame:
    return pd.DataFrame({"event_date": [when], "event_pr": [7], "event_title": ["move"]})


def test_successors_are_the_workflows_first_run_around_the_event():
    runs = runs_frame(
        [
            {"run_id": 1, "created_at": day(0), "workflow_path": "old.yml"},
            {"run_id": 2, "created_at": day(10.5), "workflow_path": "old.yml"},  # after: old
            {"run_id": 3, "created_at": day(9.5), "workflow_path": "new.yml"},  # a day before
            {"run_id": 4, "created_at": day(11), "workflow_path": "new.yml"},
            {"run_id": 5, "created_at": day(12), "workflow_path": "new.yml"},
            {"run_id": 6, "created_at": day(13), "workflow_path": "new.yml"},
            {"run_id": 7, "created_at": day(30), "workflow_path": "late.yml"},  # too late
        ]
    ).assign(
        conclusion="x",
        logical_outcome=["pass", "pass", "fail", "excluded", "flaky", "pass", "pass"],
        failure_category=None,
    )
    strips = successor_first_runs(runs, _event_table(day(10)), first_runs=3, window_days=14)
    assert strips["workflow_path"].unique().tolist() == ["new.yml"]
    assert strips["logical_outcome"].tolist() == ["fail", "flaky", "pass"]  # excluded: skipped
    assert strips["order"].tolist() == [1, 2, 3] and set(strips["event_pr"]) == {7}
    born = pd.Series({"new.yml": day(1), "old.yml": day(0), "late.yml": day(30)})
    assert successor_first_runs(runs, _event_table(day(10)), 3, 14, born=born).empty


def _logical(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows,
        columns=["run_id", "logical_job", "runner_name", "logical_outcome", "red_job_id", "at"],
    )
    return frame.assign(workflow_path="a.yml", created_at=frame.pop("at").map(day))


def test_works_elsewhere_means_green_on_another_runner_the_same_week():
    jobs = _logical(
        [
            (1, "e2e", "a", "fail", 11, 0),  # 2026-06-01 is a Monday
            (2, "e2e", "a", "fail", 12, 1),
            (3, "e2e", "b", "flaky", None, 2),  # green on b the same week: a's failures
            (4, "solo", "a", "fail", 14, 0),  # no green anywhere
            (5, "e2e", "b", "fail", 15, 1),  # b was green itself, not elsewhere
            (6, "late", "a", "fail", 16, 0),
            (7, "late", "b", "pass", None, 8),  # green on b, but the next week
        ]
    )
    flagged = failed_elsewhere(jobs, "runner_name")
    flags = flagged.set_index("run_id")["works_elsewhere"]
    assert flags.to_dict() == {1: True, 2: True, 4: False, 5: False, 6: False}
    table = works_elsewhere(flagged, "runner_name").set_index("runner_name")
    assert table.loc["a", "failed_jobs"] == 4
    assert table.loc["a", "works_elsewhere"] == pytest.approx(0.5)
    assert table.loc["b", "works_elsewhere"] == 0.0


def test_a_job_with_no_runner_is_one_place_named_or_not():
    """The Runners page flags runner names once, on the jobs as stored, and only names the
    missing runner "(none)" for its table: the flags must not depend on that name."""
    jobs = _logical(
        [
            (1, "e2e", None, "fail", 11, 0),
            (2, "e2e", None, "pass", None, 1),  # green with no runner too: not elsewhere
            (3, "solo", None, "fail", 13, 0),
            (4, "solo", "b", "pass", None, 1),  # green on a runner: elsewhere
            (5, "both", "a", "fail", 15, 0),
            (6, "both", None, "flaky", None, 2),  # green with no runner: elsewhere for a
        ]
    )
    named = jobs.assign(runner_name=jobs["runner_name"].fillna("(none)"))
    unnamed = failed_elsewhere(jobs, "runner_name").set_index("run_id")["works_elsewhere"]
    assert unnamed.to_dict() == {1: False, 3: True, 5: True}
    flags = failed_elsewhere(named, "runner_name").set_index("run_id")["works_elsewhere"]
    assert flags.to_dict() == unnamed.to_dict()


def _flags_by_definition(jobs: pd.DataFrame) -> dict[int, bool]:
    """works_elsewhere row by row, straight from docs/vocabulary.md: another runner (no runner
    is one place) went green on the same job in the same Monday-to-Sunday UTC week."""

    def week(at: pd.Timestamp) -> object:
        return None if pd.isna(at) else (at.normalize() - pd.Timedelta(days=at.weekday()))

    def place(row: pd.Series) -> object:
        return None if pd.isna(row["runner_name"]) else row["runner_name"]

    def job(row: pd.Series) -> object:
        keys = (row["workflow_path"], row["logical_job"], week(row["created_at"]))
        return None if any(k is None or pd.isna(k) for k in keys) else keys

    rows = [row for _, row in jobs.iterrows()]
    green = {(job(r), place(r)) for r in rows if r["logical_outcome"] in ("pass", "flaky")}
    return {
        int(r["run_id"]): job(r) is not None
        and any(j == job(r) and p != place(r) for j, p in green)
        for r in rows
        if r["logical_outcome"] == "fail"
    }


@pytest.mark.parametrize("renumbered", [False, True])
def test_works_elsewhere_matches_its_definition_on_random_jobs(monkeypatch, renumbered):
    """Random jobs with missing names, runners and times, across week boundaries and before
    1970, against the definition written as a loop; ``renumbered`` forces the dense
    renumbering of the job codes that very large scopes take."""
    if renumbered:
        monkeypatch.setattr(analytics.elsewhere, "_MAX_CODE", 1)
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(1, 40))
        seconds = rng.integers(-20 * 86400, 40 * 86400, n)
        jobs = pd.DataFrame(
            {
                "run_id": np.arange(n),
                "workflow_path": pd.Series(rng.choice(["a.yml", "b.yml", None], n), dtype="str"),
                "logical_job": pd.Series(rng.choice(["e2e", "solo", None], n), dtype="str"),
                "runner_name": pd.Series(rng.choice(["r1", "r2", "r3", None], n), dtype="str"),
                "created_at": pd.Series(pd.to_datetime(seconds, unit="s", utc=True)).mask(
                    rng.random(n) < 0.1
                ),
                "logical_outcome": rng.choice(["pass", "flaky", "fail", "skipped"], n),
            },
            index=rng.permutation(n) + 3,
        )
        flagged = failed_elsewhere(jobs, "runner_name")
        assert flagged.index.tolist() == jobs.index[jobs["logical_outcome"] == "fail"].tolist()
        flags = dict(zip(flagged["run_id"], flagged["works_elsewhere"], strict=True))
        assert flags == _flags_by_definition(jobs)


def test_environment_failures_count_hard_failed_jobs_per_version():
    jobs = _logical(
        [
            (1, "e2e", "a", "fail", 11, 0),
            (2, "e2e", "a", "fail", 12, 1),
            (3, "e2e", "b", "pass", None, 2),
            (4, "solo", "c", "fail", 14, 0),
            (5, "solo", "c", "flaky", 15, 0),  # passed on a rerun: no hard failure
        ]
    )
    failures = failures_frame(
        [
            (1, 1, 11, "npu_env", {"cann": "8.5.0", "driver": "25.2"}),
            (2, 1, 12, "oom", {"cann": "8.5.0"}),
            (4, 1, 14, "oom", {"cann": "9.0.0"}),
            (5, 1, 15, "oom", {"cann": "9.0.0"}),
            (6, 1, 99, "oom", {}),
            (6, 1, 98, "oom", None),  # no fingerprint at all
        ]
    )
    flagged = failed_elsewhere(jobs, "runner_name")
    table = environment_failures(failures, flagged).set_index(["fact", "version"])
    assert table.loc[("cann", "8.5.0"), "failures"] == 2
    assert table.loc[("cann", "8.5.0"), "works_elsewhere_share"] == 1.0
    assert table.loc[("cann", "8.5.0"), "categories"] == "npu_env 1, oom 1"
    assert table.loc[("cann", "9.0.0"), "failures"] == 1  # the flaky one is not counted
    assert table.loc[("cann", "9.0.0"), "works_elsewhere_share"] == 0.0
    assert table.loc[("driver", "25.2"), "runners"] == 1
    assert table.index.get_level_values("fact").tolist() == ["cann", "cann", "driver"]
