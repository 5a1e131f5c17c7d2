"""The logical-job tables from counts (analytics.job_counts): counted once and works elsewhere
by hand on a few jobs, as the counts store.job_counts returns and counts_of makes."""

from __future__ import annotations

import pandas as pd

from analytics.incidents import KIND
from analytics.job_counts import (
    counts_of,
    elsewhere_flags,
    flaky_table,
    host_incidents,
    incidents_per_place,
    rated_runners,
    runner_parts,
)
from store.vocabulary import HOSTED_RUNNERS, short_lived_runners

MONDAY = pd.Timestamp("2026-06-01 10:00", tz="UTC")
NO_INCIDENT = pd.DataFrame({"kind": [], "runner": []}, dtype=object)


def _jobs(rows: list[tuple[str, str, str | None, int, str | None]]) -> pd.DataFrame:
    """Logical jobs of workflow w: (logical_job, outcome, runner, days after MONDAY, red job's
    incident); the red job id is the row number."""
    return pd.DataFrame(
        {
            "workflow_path": "w.yml",
            "logical_job": [r[0] for r in rows],
            "logical_outcome": [r[1] for r in rows],
            "runner_name": [r[2] for r in rows],
            "labels": [("gpu",)] * len(rows),
            "created_at": [MONDAY + pd.Timedelta(days=r[3]) for r in rows],
            "red_job_id": [float(i) for i in range(len(rows))],
            "incident": [r[4] for r in rows],
        }
    )


def runner_table(
    counts: pd.DataFrame, by: str, min_runs: int, incidents: pd.DataFrame
) -> pd.DataFrame:
    """The raw path's runner table per ``by`` from ``counts`` and the range's incidents."""
    return rated_runners(runner_parts(counts, min_runs, host_incidents(incidents)), by, min_runs)


def _members(jobs: pd.DataFrame) -> pd.DataFrame:
    hit = jobs[jobs["incident"].notna()]
    return pd.DataFrame({"job_id": hit["red_job_id"].astype(int), "incident_id": hit["incident"]})


def test_an_incidents_red_jobs_count_once_a_fail_if_one_failed():
    jobs = _jobs(
        [
            ("a", "flaky", "r1", 0, "i1"),
            ("a", "flaky", "r1", 1, "i1"),
            ("a", "fail", "r1", 2, "i1"),  # i1 failed once: it counts as one fail
            ("a", "flaky", "r1", 3, "i2"),  # i2 only flaky: one flaky
            ("a", "fail", "r1", 4, None),
            ("a", "pass", "r1", 5, "i1"),  # green: in no incident whatever members say
            ("b", "excluded", "r1", 0, None),
        ]
    )
    counts = counts_of(jobs, _members(jobs))
    assert counts["n"].sum() == len(jobs)
    table = flaky_table(counts.assign(lineage="w"), min_runs=1).set_index("logical_job")
    got = table.loc["a", ["runs", "pass", "flaky", "fail"]].tolist()
    once = table.loc["a", ["runs_once", "pass_once", "flaky_once", "fail_once"]].tolist()
    assert (got, once) == ([6, 1, 3, 2], [4, 1, 1, 2])
    assert table.loc["a", "flake_rate_once"] == 0.5  # 1 flaky of 2 green, counted once
    assert table.loc["b", "runs"] == 0 and table.loc["b", "runs_once"] == 0


def test_a_failure_works_elsewhere_when_its_job_went_green_on_another_runner_that_week():
    jobs = _jobs(
        [
            ("a", "fail", "r1", 0, None),
            ("a", "pass", "r2", 1, None),  # same week, another runner: r1's fail
            ("a", "fail", "r1", 7, None),
            ("a", "pass", "r1", 8, None),  # next week only r1 itself went green
            ("b", "fail", None, 0, None),
            ("b", "flaky", "r3", 2, None),  # a job that never ran is a place of its own
        ]
    )
    counts = counts_of(jobs, _members(jobs))
    flags = elsewhere_flags(
        counts.assign(runner_name=counts["runner_name"].fillna("-")), "runner_name"
    )
    found = {(r.logical_job, r.week, r.runner_name): r.works_elsewhere for r in flags.itertuples()}
    assert found == {
        ("a", "2026-06-01", "r1"): True,
        ("a", "2026-06-08", "r1"): False,
        ("b", "2026-06-01", "-"): True,
    }
    table = runner_table(counts, "runner_name", 1, NO_INCIDENT).set_index("runner_name")
    assert table.loc["r1", ["failed_jobs", "works_elsewhere"]].tolist() == [2, 0.5]
    assert table.loc["(none)", ["failed_jobs", "works_elsewhere"]].tolist() == [1, 1.0]


def test_the_hosted_vms_are_one_runner_and_their_failures_work_elsewhere_on_another_vm():
    jobs = _jobs(
        [
            ("a", "fail", "GitHub Actions 1", 0, None),
            ("a", "pass", "GitHub Actions 2", 1, None),  # another VM: works elsewhere
            ("a", "flaky", "GitHub Actions 3", 2, None),
            ("b", "fail", "r1", 0, None),
            ("b", "pass", "r1", 1, None),
        ]
    )
    table = runner_table(counts_of(jobs, _members(jobs)), "runner_name", 1, NO_INCIDENT)
    assert sorted(table["runner_name"]) == [HOSTED_RUNNERS, "r1"]  # three VMs, one row
    rows = table.set_index("runner_name")
    hosted = rows.loc[HOSTED_RUNNERS, ["runs", "pass", "flaky", "fail", "failed_jobs"]]
    assert hosted.tolist() == [3, 1, 1, 1, 1]
    assert rows.at[HOSTED_RUNNERS, "works_elsewhere"] == 1.0
    assert rows.at["r1", "works_elsewhere"] == 0.0  # only r1 itself went green
    incidents = pd.DataFrame(
        {"kind": KIND["host"], "runner": ["GitHub Actions 1", "GitHub Actions 9", "r1"]}
    )
    assert incidents_per_place(table["runner_name"], incidents).tolist() == [
        {"r1": 1, HOSTED_RUNNERS: 2}[name] for name in table["runner_name"]
    ]


def test_hosts_too_short_lived_to_rate_are_one_row_per_pool_and_an_incidents_host_keeps_its_own():
    jobs = _jobs(
        [
            ("a", "fail", "e1", 0, "i1"),  # e1..e3: one job each, pool gpu
            ("a", "fail", "e2", 0, "i1"),  # i1's two fails on the pooled row count once
            ("a", "pass", "e3", 1, None),  # another short-lived host: e1, e2 work elsewhere
            ("b", "fail", "c1", 0, None),  # c1 and c2: short-lived, pool cpu
            ("b", "fail", "c2", 7, None),
            ("b", "pass", "s", 1, None),  # s ran one job, but an incident names it
            ("c", "pass", "h", 0, None),  # h ran two counted jobs: min_runs, its own row
            ("c", "fail", "h", 1, None),
            ("c", "excluded", "e4", 0, None),  # a host with no counted job is pooled too
        ]
    ).assign(labels=[("gpu",)] * 3 + [("cpu",)] * 2 + [("gpu",)] * 4)
    incidents = pd.DataFrame({"kind": KIND["host"], "runner": ["s"]})
    table = runner_table(counts_of(jobs, _members(jobs)), "runner_name", 2, incidents)
    gpu, cpu = (short_lived_runners(pool) for pool in ("gpu", "cpu"))
    rows = table.set_index("runner_name")
    assert sorted(rows.index) == sorted([gpu, cpu, "s", "h"])
    columns = ["runners", "runs", "pass", "fail", "fail_once", "failed_jobs", "works_elsewhere"]
    assert rows.loc[gpu, columns].tolist() == [4, 3, 1, 2, 1, 2, 1.0]
    assert rows.loc[cpu, columns].tolist() == [2, 2, 0, 2, 2, 2, 0.5]  # c2's week: no green
    assert rows.loc["s", columns[:-1]].tolist() == [1, 1, 1, 0, 0, 0]
    assert rows.loc["h", ["runners", "runs", "fail", "works_elsewhere"]].tolist() == [1, 2, 1, 0.0]
    assert incidents_per_place(table["runner_name"], incidents).tolist() == [
        int(name == "s") for name in table["runner_name"]
    ]
