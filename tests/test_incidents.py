"""analytics.incidents on hand-built frames: which bursts are incidents, their cause, span and
counts, and which are not (a raised rate, one workflow, too few jobs, a gap)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from analytics.incidents import (
    FAILURE_COLUMNS,
    JOB_COLUMNS,
    affected_spans,
    candidate_spans,
    detect,
)
from store.project import IncidentSettings

SETTINGS = IncidentSettings(window_hours=6, min_jobs=5, min_runs=3, min_workflows=2, min_share=0.6)
T0 = pd.Timestamp("2026-08-14T13:00:00Z")
_ids = itertools.count(1)


def job(
    hour: float,
    *,
    workflow: str = "a.yml",
    name: str = "gpu_test",
    runner: str | None = None,
    labels: tuple[str, ...] = ("gpu",),
    failed: str | None = None,
    signature: str | None = None,
    line: str | None = None,
) -> dict[str, object]:
    """One job attempt ``hour`` hours after T0 in a run of its own; ``failed``: its category."""
    number = next(_ids)
    return {
        "run_id": number,
        "run_attempt": 1,
        "job_id": 1000 + number,
        "at": T0 + pd.Timedelta(hours=hour),
        "runner_name": runner or f"runner-{number}",
        "labels": labels,
        "workflow_path": f".github/workflows/{workflow}",
        "name": name,
        "category": failed,
        "signature": signature or (f"sig-{number}" if failed else None),
        "line": line,
    }


def run(
    rows: list[dict[str, object]], within: list[tuple[pd.Timestamp, pd.Timestamp]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Detection on ``rows`` (only the failures that started ``within`` those spans, given)."""
    frame = pd.DataFrame(rows)
    failures = frame[frame["category"].notna()][FAILURE_COLUMNS].reset_index(drop=True)
    if within is not None:
        inside = failures["at"].map(lambda at: any(a <= at <= b for a, b in within))
        failures = failures[inside].reset_index(drop=True)
    spans = candidate_spans(failures, SETTINGS)
    within = frame["at"].map(lambda at: any(a <= at <= b for a, b in spans))
    return detect(failures, frame[within][JOB_COLUMNS], SETTINGS, "o/r")


def outage(hours: range, signature: str = "hub503") -> list[dict[str, object]]:
    """Every GPU test job of two workflows failing with one signature, once an hour."""
    return [
        job(
            h,
            workflow=("a.yml", "b.yml")[h % 2],
            failed="network",
            signature=signature,
            line="huggingface_hub.errors.HfHubHTTPError: 503 Server Error",
        )
        for h in hours
    ]


def test_a_signature_outage_across_two_workflows_is_one_incident_with_its_span() -> None:
    rows = [job(-3), job(-2, workflow="b.yml"), *outage(range(6)), job(8), job(9, workflow="b.yml")]
    incidents, members = run(rows)
    assert len(incidents) == 1
    found = incidents.iloc[0]
    assert (found["kind"], found["category"], found["signature"]) == (
        "signature",
        "network",
        "hub503",
    )
    assert found["runner"] is None
    assert found["label"] == "network: huggingface_hub.errors.HfHubHTTPError: 503 Server Error"
    assert (found["started_at"], found["ended_at"]) == (T0, T0 + pd.Timedelta(hours=5))
    assert (found["jobs"], found["runs"], found["workflows"]) == (6, 6, 2)
    assert sorted(members["job_id"]) == sorted(r["job_id"] for r in rows if r["category"])
    assert set(members["incident_id"]) == {found["id"]}


def test_a_stuck_host_is_a_runner_incident_even_when_its_failures_share_a_signature() -> None:
    host = "linux-aarch64-a3-8-stuck-runner-07"
    stuck = [
        job(
            h,
            workflow=("asc.yml", "v1_asc.yml")[h % 2],
            runner=host,
            labels=("a3",),
            failed="npu_env",
            signature="hccl",
        )
        for h in range(0, 20, 3)
    ]
    healthy = [job(h + 1, workflow="asc.yml", labels=("a3",)) for h in range(0, 20, 3)]
    incidents, members = run(stuck + healthy)
    assert len(incidents) == 1
    found = incidents.iloc[0]
    assert (found["kind"], found["runner"], found["category"]) == ("runner", host, "npu_env")
    assert found["label"] == f"npu_env on runner {host}"
    assert found["signature"] == "hccl"
    assert (found["jobs"], found["workflows"]) == (7, 2)
    assert len(members) == 7


def test_one_category_across_workflows_with_different_signatures_is_a_workflows_incident() -> None:
    rows = [
        job(h, workflow=f"w{h % 3}.yml", labels=(f"pool{h % 3}",), failed="missing_dependency")
        for h in range(6)
    ]
    incidents, _ = run(rows)
    assert list(incidents["kind"]) == ["workflows"]
    assert incidents.iloc[0]["label"] == "missing_dependency across 3 workflows"
    assert incidents.iloc[0]["signature"] is None


def test_a_raised_rate_is_not_an_incident() -> None:
    """A third of the jobs failing with one signature for a day: a regime, not an incident."""
    rows = [
        job(
            h,
            workflow=("a.yml", "b.yml")[h % 2],
            failed="network" if h % 3 == 0 else None,
            signature="hub503",
        )
        for h in range(24)
    ]
    incidents, members = run(rows)
    assert incidents.empty and members.empty


def test_one_workflow_failing_alone_is_not_an_incident() -> None:
    rows = [job(h, failed="network", signature="hub503") for h in range(8)]
    incidents, _ = run(rows)
    assert incidents.empty


def test_too_few_jobs_or_runs_is_not_an_incident() -> None:
    incidents, _ = run(outage(range(4)))
    assert incidents.empty


def test_failures_further_apart_than_the_window_are_two_bursts() -> None:
    rows = [*outage(range(5)), *outage(range(20, 25))]
    incidents, members = run(rows)
    assert len(incidents) == 2
    assert list(incidents["started_at"]) == [T0, T0 + pd.Timedelta(hours=20)]
    assert members.groupby("incident_id").size().tolist() == [5, 5]


def test_a_failure_of_two_labels_belongs_to_one_incident_only() -> None:
    rows = [
        job(h, workflow=f"w{h % 2}.yml", labels=("npu", "a3"), failed="npu_env") for h in range(6)
    ]
    incidents, members = run(rows)
    assert len(incidents) == 1 and incidents.iloc[0]["kind"] == "runner"
    assert not members.duplicated(["run_id", "run_attempt", "job_id"]).any()
    assert len(members) == 6


def test_the_same_failures_in_another_order_give_the_same_incidents() -> None:
    rows = [*outage(range(6)), job(7), job(8, workflow="b.yml")]
    first = run(rows)
    again = run(list(reversed(rows)))
    pd.testing.assert_frame_equal(first[0], again[0])
    key = ["job_id"]
    pd.testing.assert_frame_equal(
        first[1].sort_values(key, ignore_index=True), again[1].sort_values(key, ignore_index=True)
    )


@pytest.mark.parametrize("share", [0.5, 0.9])
def test_the_share_threshold_decides(share: float) -> None:
    """Five of seven same jobs failing (71%): an incident at 0.5, none at 0.9."""
    rows = [*outage(range(5)), job(1.5), job(2.5, workflow="b.yml")]
    frame = pd.DataFrame(rows)
    failures = frame[frame["category"].notna()][FAILURE_COLUMNS]
    settings = IncidentSettings(
        window_hours=6, min_jobs=5, min_runs=3, min_workflows=2, min_share=share
    )
    incidents, _ = detect(failures, frame[JOB_COLUMNS], settings, "o/r")
    assert len(incidents) == (1 if share == 0.5 else 0)


def test_failures_that_nothing_explains_share_no_signature_cause() -> None:
    """Category unknown with no deciding line: one signature for all, which names no cause."""
    rows = [
        job(
            0.05 * h,
            workflow=f"w{h}.yml",
            labels=(f"pool{h}",),
            failed="unknown",
            signature="nothing-known",
        )
        for h in range(6)
    ]
    incidents, _ = run(rows)
    assert incidents.empty


def test_a_stuck_host_in_one_workflow_is_an_incident_and_its_signature_alone_is_not() -> None:
    """A host fails whatever it is sent: one workflow's jobs on it suffice. The same failures
    on hosts of their own are that workflow's own failure, not an incident."""
    line = "RuntimeError: halDeviceOpen failed"

    def jobs(host: str | None) -> list[dict[str, object]]:
        return [job(h, runner=host, failed="npu_env", signature="hal", line=line) for h in range(6)]

    incidents, _ = run(jobs("a3-stuck-07"))
    assert incidents[["kind", "runner", "workflows", "jobs"]].to_dict("records") == [
        {"kind": "runner", "runner": "a3-stuck-07", "workflows": 1, "jobs": 6}
    ]
    incidents, _ = run(jobs(None))
    assert incidents.empty


def _updated(
    before: list[dict[str, object]], after: list[dict[str, object]], changed: set[object]
) -> pd.DataFrame:
    """The incidents of ``after`` as a collect keeps them: those found on ``before``, found
    again only within ``affected_spans`` of the runs ``changed``."""
    old, old_members = run(before)
    frame = pd.DataFrame(after)
    touched = frame[frame["run_id"].isin(changed)]["at"]
    held_ids = set(old_members[old_members["run_id"].isin(changed)]["incident_id"])
    held = [(r.started_at, r.ended_at) for r in old.itertuples() if r.id in held_ids]
    starts = frame[frame["category"].notna()]["at"]
    spans = affected_spans(starts, touched, held, SETTINGS)
    overlaps = old.apply(lambda r: any(r.started_at <= b and r.ended_at >= a for a, b in spans), 1)
    kept = old[~overlaps] if len(old) else old
    found = pd.concat([kept, run(after, spans)[0]], ignore_index=True)
    return found.sort_values(["started_at", "id"], ignore_index=True)


def _changes() -> dict[str, tuple[list[dict[str, object]], list[dict[str, object]], set[object]]]:
    """(before, after, the runs that changed) of a few collects: outages a day apart, then
    runs added, gone or diluting one."""
    first, second, third = outage(range(5)), outage(range(24, 29)), outage(range(48, 53))
    calm = [job(h, workflow=("a.yml", "b.yml")[h % 2]) for h in range(5, 70, 3)]
    base = [*first, *second, *third, *calm]
    bridge = outage(range(6, 24, 3))  # chains the first two outages into one burst
    far = outage(range(100, 106))  # a new outage of its own
    dilute = [job(h + 0.5, workflow=("a.yml", "b.yml")[h % 2]) for h in range(24, 29)] * 2
    gone = {row["run_id"] for row in second[:3]}
    return {
        "a bridge": (base, [*base, *bridge], {r["run_id"] for r in bridge}),
        "a new outage": (base, [*base, *far], {r["run_id"] for r in far}),
        "green jobs within one": (base, [*base, *dilute], {r["run_id"] for r in dilute}),
        "failures gone": (base, [r for r in base if r["run_id"] not in gone], gone),
    }


@pytest.mark.parametrize(
    "change", ["a bridge", "a new outage", "green jobs within one", "failures gone"]
)
def test_detection_within_the_affected_spans_finds_what_detection_over_everything_finds(
    change: str,
) -> None:
    """A collect finds the incidents again only where its runs can change them: the rest kept
    and the spans found again equal a detection over every failure."""
    before, after, changed = _changes()[change]
    expected = run(after)[0]
    assert not expected.equals(run(before)[0])  # the change does change the incidents
    pd.testing.assert_frame_equal(_updated(before, after, changed), expected, check_dtype=False)


def test_the_affected_spans_leave_out_the_stretches_no_changed_run_is_in() -> None:
    rows = [*outage(range(5)), *outage(range(24, 29)), *outage(range(48, 53))]
    frame = pd.DataFrame(rows)
    touched = frame["at"].iloc[[6]]  # in the second outage
    spans = affected_spans(frame["at"], touched, [], SETTINGS)
    assert spans == [(T0 + pd.Timedelta(hours=24), T0 + pd.Timedelta(hours=28))]
    assert affected_spans(frame["at"], pd.Series([T0 + pd.Timedelta(hours=15)]), [], SETTINGS) == []
