"""Logical runs, logical jobs, lineage and verdicts on small hand-computed tables."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.config_tables import invalid_window_table, workflow_table
from analytics.evidence import CONFIG_BASIS, NO_LOG
from analytics.outcomes import (
    attach_lineage,
    in_scope,
    logical_jobs,
    logical_runs,
    mark_invalid_windows,
    normalise_job_names,
    with_run_categories,
)
from analytics.verdicts import job_verdicts
from store.settings import load_config
from tests.support.analytics_frames import (
    attempts_frame,
    day,
    failures_frame,
    jobs_frame,
    runs_frame,
)

STRIP = r"\s*\([^)]*\)$|\s*/\s*shard[-_ ]?\d+$"


def _runs() -> pd.DataFrame:
    return runs_frame(
        [
            {"run_id": 1, "created_at": day(0), "conclusion": "success"},
            {"run_id": 2, "created_at": day(1), "conclusion": "success", "run_attempt": 2},
            {"run_id": 3, "created_at": day(2), "conclusion": "failure", "run_attempt": 2},
            {"run_id": 4, "created_at": day(3), "conclusion": "cancelled"},
            {"run_id": 5, "created_at": day(4), "conclusion": None, "status": "in_progress"},
            {"run_id": 6, "created_at": day(5), "conclusion": "success", "run_attempt": 2},
            {"run_id": 7, "created_at": day(6), "conclusion": "startup_failure"},
        ]
    )


def test_logical_runs_collapse_attempts():
    attempts = attempts_frame(
        [
            (1, 1, "success"),
            (2, 1, "failure"),
            (2, 2, "success"),
            (3, 1, "failure"),
            (3, 2, "failure"),
            (4, 1, "cancelled"),
            (6, 1, "cancelled"),
            (6, 2, "success"),
        ]
    )
    out = logical_runs(_runs(), attempts).set_index("run_id")
    assert out["logical_outcome"].to_dict() == {
        1: "pass",
        2: "flaky",
        3: "fail",
        4: "excluded",
        5: "excluded",
        6: "pass",  # cancelled then green: nothing failed
        7: "fail",
    }
    assert out.loc[3, "first_attempt_conclusion"] == "failure"
    assert out.loc[7, "first_attempt_conclusion"] == "startup_failure"
    assert out.loc[3, "red_attempts"] == 1


def test_logical_runs_without_attempt_rows_use_the_run_alone():
    runs = runs_frame([{"run_id": 1, "created_at": day(0), "conclusion": "failure"}])
    out = logical_runs(runs, attempts_frame([]))
    assert out["logical_outcome"].tolist() == ["fail"]


def test_normalise_job_names_strips_matrix_and_shards():
    names = pd.Series(["e2e (fsdp2, 8)", "unit / shard-2", "plain", "unit / shard_10"])
    assert normalise_job_names(names, STRIP).tolist() == ["e2e", "unit", "plain", "unit"]
    assert normalise_job_names(names, "").tolist() == names.tolist()


def test_logical_jobs_across_attempts_and_shards():
    runs = runs_frame(
        [
            {"run_id": 1, "created_at": day(0), "conclusion": "success", "run_attempt": 2},
            {"run_id": 2, "created_at": day(1), "conclusion": "failure"},
        ]
    )
    jobs = jobs_frame(
        [
            (10, 1, 1, "unit / shard-1", "success"),
            (11, 1, 1, "unit / shard-2", "failure", "gpu-a"),
            (12, 1, 2, "unit / shard-1", "success"),
            (13, 1, 2, "unit / shard-2", "success", "gpu-b"),
            (14, 1, 1, "lint", "success"),
            (20, 2, 1, "unit / shard-1", "failure", "gpu-c"),
            (21, 2, 1, "unit / shard-2", "success"),
            (22, 2, 1, "lint", "skipped"),
        ]
    )
    out = logical_jobs(jobs, runs, STRIP).set_index(["run_id", "logical_job"])
    assert len(out) == 4
    assert out.loc[(1, "unit"), "logical_outcome"] == "flaky"
    assert out.loc[(1, "unit"), "red_job_id"] == 11
    assert out.loc[(1, "unit"), "red_attempt"] == 1
    assert out.loc[(1, "unit"), "attempts"] == 2
    assert out.loc[(1, "lint"), "logical_outcome"] == "pass"
    assert out.loc[(2, "unit"), "logical_outcome"] == "fail"
    assert out.loc[(2, "unit"), "runner_name"] == "gpu-c"
    assert out.loc[(2, "lint"), "logical_outcome"] == "excluded"
    assert pd.isna(out.loc[(1, "lint"), "red_job_id"])


def test_attach_lineage_from_config_and_fallback():
    config = load_config()
    frame = pd.DataFrame(
        {
            "workflow_path": [
                ".github/workflows/e2e_fully_async_policy.yml",
                ".github/workflows/other.yaml",
            ]
        }
    )
    out = attach_lineage(frame, workflow_table(config.project().workflows))
    assert out["lineage"].tolist() == ["e2e_v1_separate_async", "other"]
    assert out["tags"].tolist() == ["fully_async", ""]
    assert out["accelerator"].tolist() == ["gpu", ""]


def test_attach_lineage_reads_the_workflows_by_column(monkeypatch):
    """The configured workflows are read from their columns' lists, not row by row: itertuples
    cost each table with lineages 0.8 ms, three of them on the Flaky jobs page (#49)."""
    config = load_config()
    workflows = workflow_table(config.project().workflows)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the workflows read row by row")

    monkeypatch.setattr(pd.DataFrame, "itertuples", refused)
    frame = pd.DataFrame({"workflow_path": [".github/workflows/e2e_fully_async_policy.yml"]})
    assert attach_lineage(frame, workflows)["lineage"].tolist() == ["e2e_v1_separate_async"]


def test_attach_lineage_per_row_whatever_the_index_and_the_gaps():
    """Each row gets its workflow's cells, looked up once per workflow: rows in any order and
    index, a workflow listed without a lineage or tags, a row without a workflow, an old
    lineage column replaced."""
    workflows = pd.DataFrame(
        {
            "workflow_path": ["w/a.yml", "w/b.yml"],
            "lineage": ["A", None],
            "tags": [None, "nightly"],
            "accelerator": ["npu", None],
        }
    )
    paths = ["w/b.yml", "w/a.yml", None, "w/c.yaml", "w/a.yml"]
    frame = pd.DataFrame({"workflow_path": paths, "lineage": "old"}, index=[9, 7, 5, 3, 1])
    out = attach_lineage(frame, workflows)
    assert out.index.tolist() == [0, 1, 2, 3, 4]
    assert out["lineage"].tolist()[:2] == ["b", "A"] and pd.isna(out["lineage"][2])
    assert out["lineage"].tolist()[3:] == ["c", "A"]
    assert out["tags"].tolist() == ["nightly", "", "", "", ""]
    assert out["accelerator"].tolist() == ["", "npu", "", "", "npu"]


def test_run_category_takes_the_deciding_attempt_and_priority():
    runs = logical_runs(
        _runs(),
        attempts_frame([(2, 1, "failure"), (2, 2, "success"), (3, 1, "failure")]),
    )
    failures = failures_frame(
        [
            (2, 1, 20, "network"),
            (3, 1, 30, "oom"),
            (3, 2, 31, "unknown"),
            (3, 2, 32, "oom"),
            (7, 1, 0, "ci_config"),
        ]
    )
    out = with_run_categories(runs, failures).set_index("run_id")["failure_category"]
    assert out[2] == "network"
    assert out[3] == "oom"  # the latest attempt; oom outranks unknown
    assert out[7] == "ci_config"
    assert pd.isna(out[1])


def test_scope():
    runs = runs_frame(
        [
            {"run_id": 1, "created_at": day(0), "conclusion": "success"},
            {"run_id": 2, "created_at": day(0), "conclusion": "success", "event": "schedule"},
            {"run_id": 3, "created_at": day(0), "conclusion": "success", "head_branch": "dev"},
            {"run_id": 4, "created_at": day(0), "conclusion": "success", "event": "pull_request"},
        ]
    )
    assert runs[in_scope(runs, "default", "main")]["run_id"].tolist() == [1, 2]
    assert runs[in_scope(runs, "pr", "main")]["run_id"].tolist() == [4]
    assert len(runs[in_scope(runs, "all", "main")]) == 4
    with pytest.raises(ValueError):
        in_scope(runs, "nightly", "main")


def _sequence(outcomes: list[str], shas: list[str] | None = None) -> pd.DataFrame:
    """One logical job 'e2e' over runs 1..n on main, one per day."""
    n = len(outcomes)
    frame = runs_frame(
        [{"run_id": i + 1, "created_at": day(i), "conclusion": "x"} for i in range(n)]
    )
    frame["head_sha"] = shas or [f"sha{i}" for i in range(n)]
    return frame.assign(
        logical_job="e2e",
        logical_outcome=outcomes,
        last_attempt=[2 if o == "flaky" else 1 for o in outcomes],
        red_attempt=[1.0 if o in ("flaky", "fail") else None for o in outcomes],
        red_job_id=[100.0 + i if o in ("flaky", "fail") else None for i, o in enumerate(outcomes)],
    )


def test_verdicts_hand_computed():
    #            1       2       3       4       5       6        7       8       9
    outcomes = ["pass", "fail", "pass", "fail", "fail", "flaky", "pass", "fail", "fail"]
    jobs = _sequence(outcomes)
    failures = failures_frame([(8, 1, 107, "npu_env")])
    out = job_verdicts(jobs, failures).set_index("run_id")
    assert out["verdict"].to_dict() == {
        2: "one_off",
        4: "persistent",
        5: "persistent",
        6: "flaky",
        8: "infra",
        9: "persistent",
    }
    assert out.loc[2, "evidence"] == "isolated: previous run 1 and next run 3 passed"
    assert out.loc[4, "evidence"] == "next run 5 also failed"
    assert out.loc[5, "evidence"] == "previous run 4 also failed"
    assert out.loc[6, "evidence"] == "failed on attempt 1, passed on attempt 2 of run 6"
    assert out.loc[8, "evidence"] == "category npu_env"


def test_verdicts_same_commit_and_no_neighbour():
    jobs = _sequence(["fail", "pass"], shas=["abc", "abc"])
    out = job_verdicts(jobs, failures_frame([])).set_index("run_id")
    assert out.loc[1, "verdict"] == "flaky"
    assert out.loc[1, "evidence"] == "passed in run 2 on the same commit"
    alone = job_verdicts(_sequence(["fail"]), failures_frame([]))
    assert alone["verdict"].tolist() == ["unclassified"]
    assert alone["evidence"].tolist() == ["no neighbour run"]
    edge = job_verdicts(_sequence(["pass", "fail"]), failures_frame([]))
    assert edge["verdict"].tolist() == ["unclassified"]


def test_verdicts_skip_excluded_neighbours():
    jobs = _sequence(["pass", "fail", "excluded", "pass"])
    out = job_verdicts(jobs, failures_frame([]))
    assert out["verdict"].tolist() == ["one_off"]
    assert out["next_run_id"].tolist() == [4]


CONCLUSIONS = ["success", "failure", "timed_out", "cancelled", "skipped", None]


def _naive_logical_jobs(jobs: pd.DataFrame) -> dict[tuple[int, str], dict]:
    """DESIGN.md's definition, one (run, logical job) at a time: an attempt is red if any
    shard is red, green if every shard is green."""
    out = {}
    jobs = jobs.assign(logical_job=normalise_job_names(jobs["name"], STRIP))
    for key, group in jobs.groupby(["run_id", "logical_job"]):
        attempts = []
        for attempt, shards in sorted(group.groupby("run_attempt")):
            red = shards["conclusion"].isin(["failure", "timed_out", "startup_failure"]).any()
            green = (shards["conclusion"] == "success").all()
            attempts.append((attempt, red, green, shards))
        last, red, green, _ = attempts[-1]
        red_before = sum(r for _, r, _, _ in attempts[:-1])
        reds = [(a, s) for a, r, _, s in attempts if r]
        first_red, first_green = attempts[0][1], attempts[0][2]
        out[key] = {
            "attempts": len(attempts),
            "last_attempt": last,
            "red_attempts": red_before,
            "first_conclusion": "failure" if first_red else "success" if first_green else "other",
            "logical_outcome": "fail"
            if red
            else ("flaky" if red_before else "pass")
            if green
            else "excluded",
            "red_attempt": reds[-1][0] if reds else None,
            "red_job_ids": set(
                reds[-1][1].loc[reds[-1][1]["conclusion"].isin(["failure", "timed_out"]), "job_id"]
            )
            if reds
            else set(),
        }
    return out


@given(
    st.lists(
        st.tuples(
            st.integers(1, 4),  # run
            st.integers(1, 3),  # attempt
            st.sampled_from(["unit / shard-1", "unit / shard-2", "lint", "e2e (fsdp2)"]),
            st.sampled_from(CONCLUSIONS),
        ),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=200, deadline=None)
def test_logical_jobs_match_the_definition(rows):
    jobs = jobs_frame([(i + 1, *row) for i, row in enumerate(rows)])
    runs = runs_frame([{"run_id": r, "created_at": day(r)} for r in sorted(set(jobs["run_id"]))])
    got = logical_jobs(jobs, runs, STRIP).set_index(["run_id", "logical_job"])
    expected = _naive_logical_jobs(jobs)
    assert set(got.index) == set(expected)
    for key, want in expected.items():
        row = got.loc[key]
        for column in ("attempts", "last_attempt", "red_attempts", "first_conclusion"):
            assert row[column] == want[column], (key, column)
        assert row["logical_outcome"] == want["logical_outcome"], key
        if want["red_attempt"] is None:
            assert pd.isna(row["red_attempt"]) and pd.isna(row["red_job_id"])
        else:
            assert row["red_attempt"] == want["red_attempt"]
            assert row["red_job_id"] in want["red_job_ids"]


def test_red_runs_in_a_configured_invalid_window_are_ci_config(tmp_path):
    (tmp_path / "c.toml").write_text(
        "[[invalid_windows]]\n"
        'workflow = "a.yml"\nfrom = "2026-06-02"\nto = "2026-06-04"\nreason = "bad yaml"\n'
    )
    windows = invalid_window_table(
        load_config(tmp_path / "c.toml", env={}).project().invalid_windows
    )
    runs = pd.DataFrame(
        {
            "run_id": [1, 2, 3, 4, 5],
            "workflow_path": ["a.yml", "a.yml", "a.yml", "b.yml", "a.yml"],
            "created_at": pd.to_datetime(
                ["2026-06-01T23:00Z", "2026-06-02T01:00Z", "2026-06-03T12:00Z"]
                + ["2026-06-03T12:00Z", "2026-06-04T00:00Z"],
                utc=True,
            ),
            "logical_outcome": ["fail", "fail", "pass", "fail", "fail"],
            "failure_category": ["oom", "unknown", None, "oom", "network"],
            "failure_basis": ["log", NO_LOG, None, "log", "log"],
        }
    )
    marked = mark_invalid_windows(runs, windows)
    # only run 2: red, of a.yml, inside [from, to); a green run keeps no category
    categories = marked["failure_category"].fillna("-").tolist()
    assert categories == ["oom", "ci_config", "-", "oom", "network"]
    assert marked["failure_basis"].fillna("-").tolist() == ["log", CONFIG_BASIS, "-", "log", "log"]
    assert mark_invalid_windows(runs, invalid_window_table([])) is runs
    jobs = runs.drop(columns=["failure_basis"]).rename(columns={"failure_category": "category"})
    marked_jobs = mark_invalid_windows(jobs, windows, category="category")
    assert marked_jobs["category"].fillna("-").tolist() == categories
