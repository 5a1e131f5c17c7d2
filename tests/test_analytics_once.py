"""Counted once (analytics.once): an incident's red runs of a scope count as one red run, in the
before/after windows and their sentence, the rates and the verdicts; on hand-built frames.

The acceptance case (#7357, 14-day windows, min_runs 5): before the event 18 runs passed and 2
failed; after it 10 passed, 2 failed on their own, and an incident on 2026-08-14 (the HF Hub
outage, 23 jobs) made 8 more red: 6 failed, 2 passed on a rerun.

By hand, as today: before 18/20 = 0.90 [0.70, 0.97]; after 10/20 = 0.50 [0.30, 0.70];
Fisher [[18, 2], [10, 10]], two-sided p = 0.0138: significant, worse.
Counted once: the incident's 8 red runs of the after window are one red run, a ``fail`` (one of
them failed for good), so after = 10 pass + 0 flaky + 3 fail = 13 runs, 10/13 = 0.77
[0.50, 0.92]; before is unchanged; Fisher [[18, 2], [10, 3]], p = 0.36: no significant change.
The incident is 8 of the after window's 10 red runs: 80%.
"""

from __future__ import annotations

import pandas as pd
import pytest
from scipy.stats import fisher_exact

from analytics.before_after import before_after, headline
from analytics.config_tables import event_table
from analytics.once import (
    job_incidents,
    once_counts,
    run_incidents,
    stability_once,
    verdicts_once,
)
from store.project import EventConfig
from tests.support.settings import analysis

EVENT = pd.Timestamp("2026-08-12T00:00Z")
HUB = "hub-2026-08-14"
ANALYSIS = analysis(window_days=14, min_runs=5)


def _runs() -> pd.DataFrame:
    """The acceptance case's logical runs, one lineage, on the default branch; the incident's
    runs on 2026-08-14, the others spread over the windows."""
    rows: list[tuple[str, pd.Timestamp]] = []
    before = ["pass"] * 18 + ["fail"] * 2
    rows += [(o, EVENT - pd.Timedelta(hours=10 * (i + 1))) for i, o in enumerate(before)]
    after = ["pass"] * 10 + ["fail"] * 2
    rows += [(o, EVENT + pd.Timedelta(days=3, hours=10 * i)) for i, o in enumerate(after)]
    incident = ["flaky", "fail", "fail", "fail", "flaky", "fail", "fail", "fail"]
    rows += [
        (o, EVENT + pd.Timedelta(days=2, hours=13, minutes=20 * i)) for i, o in enumerate(incident)
    ]
    rows.append(("excluded", EVENT + pd.Timedelta(days=5)))  # counts in no denominator
    return pd.DataFrame(
        {
            "run_id": range(1, len(rows) + 1),
            "workflow_path": ".github/workflows/e2e.yml",
            "lineage": "e2e_v1_separate_async",
            "created_at": [at for _, at in rows],
            "logical_outcome": [o for o, _ in rows],
            "event": "push",
            "head_branch": "main",
        }
    )


def _members(runs: pd.DataFrame) -> pd.DataFrame:
    """The incident's failures: two failed jobs in each of its 8 runs (attempt 1)."""
    hit = runs[runs["created_at"].dt.date == pd.Timestamp("2026-08-14").date()]
    ids = [int(r) for r in hit["run_id"] for _ in range(2)]
    return pd.DataFrame(
        {
            "run_id": ids,
            "run_attempt": 1,
            "job_id": [1000 + i for i in range(len(ids))],
            "incident_id": HUB,
        }
    )


INCIDENTS = pd.DataFrame(
    {
        "id": [HUB],
        "label": ["HF Hub"],
        "started_at": [pd.Timestamp("2026-08-14T13:00Z")],
        "jobs": [23],
    }
)


def _events() -> pd.DataFrame:
    migration = EventConfig(EVENT.to_pydatetime(), "migrate", 7357, "migration", None)
    return event_table([migration])


def _table() -> pd.DataFrame:
    runs = _runs()
    events = _events()
    return before_after(runs, events, ANALYSIS, default_branch="main", members=_members(runs))


def test_an_incident_in_the_after_window_is_named_and_counted_once_as_by_hand():
    assert fisher_exact([[18, 2], [10, 10]]).pvalue == pytest.approx(0.0138, abs=1e-4)
    assert fisher_exact([[18, 2], [10, 3]]).pvalue == pytest.approx(0.360, abs=1e-3)
    row = _table().iloc[0]
    today = {c: int(row[f"after_{c}"]) for c in ("runs", "pass", "flaky", "fail")}
    once = {c: int(row[f"after_{c}_once"]) for c in ("runs", "pass", "flaky", "fail")}
    assert today == {"runs": 20, "pass": 10, "flaky": 2, "fail": 8}
    assert once == {"runs": 13, "pass": 10, "flaky": 0, "fail": 3}
    assert int(row["before_runs_once"]) == int(row["before_runs"]) == 20
    assert row["after_success_rate_once"] == pytest.approx(10 / 13)
    assert row["p_value"] == pytest.approx(0.0138, abs=1e-4)
    assert row["p_value_once"] == pytest.approx(0.360, abs=1e-3)
    assert (row["after_incident_id"], row["after_incident_red"]) == (HUB, 8)
    assert pd.isna(row["before_incident_id"]) and row["before_incident_red"] == 0
    assert headline(_table(), ANALYSIS, INCIDENTS) == (
        "#7357: successors 0.50 [0.30, 0.70] n=20 in the 14 days after, "
        "vs predecessors 0.90 [0.70, 0.97] n=20 in the 14 days before; "
        "significant change, worse (p=0.014); 80% of the after window's red runs are one "
        "incident on 2026-08-14 (HF Hub, 23 jobs); counted once: no significant change (p=0.36)"
    )
    unnamed = headline(_table(), ANALYSIS)  # the incident's row not at hand: still the share
    assert unnamed.endswith(
        "80% of the after window's red runs are one incident; "
        "counted once: no significant change (p=0.36)"
    )


def test_the_sentence_says_nothing_of_incidents_when_counting_once_changes_no_conclusion():
    table = _table()
    clean = {"runs": 40, "pass": 40, "fail": 0}
    calm = table.assign(
        **{f"before_{c}{end}": n for c, n in clean.items() for end in ("", "_once")}
    )
    # 40/40 before: worse either way ([[40, 0], [10, 3]]: p = 0.012), so no incident named
    assert fisher_exact([[40, 0], [10, 3]]).pvalue == pytest.approx(0.0122, abs=1e-4)
    sentence = headline(calm, ANALYSIS, INCIDENTS)
    assert sentence.endswith("significant change, worse (p<0.001)")
    assert "incident" not in sentence and "counted once" not in sentence


def test_without_members_counted_once_equals_today():
    runs = _runs()
    events = _events()
    row = before_after(runs, events, ANALYSIS, default_branch="main").iloc[0]
    for c in ("runs", "pass", "flaky", "fail"):
        assert row[f"after_{c}_once"] == row[f"after_{c}"]
    assert row["p_value_once"] == row["p_value"]
    assert pd.isna(row["after_incident_id"])


def test_an_incident_counts_once_per_group_not_once_overall():
    runs = _runs()
    incident = run_incidents(runs, _members(runs))
    # split the incident's runs over two lineages: each keeps one red run of it
    runs = runs.assign(lineage=["A" if i % 2 else "B" for i in range(len(runs))])
    once = once_counts(runs, incident, ["lineage"])
    assert len(runs) - once["n"].sum() == 8 - 2
    kept = once.iloc[len(once) - 2 :]  # the incident's rows, after the others
    assert sorted(kept["lineage"]) == ["A", "B"]
    assert set(kept["logical_outcome"]) == {"fail"}  # each group's first fail, not its flaky


def test_counts_count_once_as_the_rows_they_count():
    """A counts frame (``n`` rows each) counted once gives the rows' answer: an incident's
    rows of a group are one row of weight 1 whatever their counts."""
    runs = _runs().assign(lineage=lambda f: ["A" if i % 2 else "B" for i in range(len(f))])
    incident = run_incidents(runs, _members(runs))
    keyed = runs.assign(incident_id=incident)
    counts = (
        keyed.groupby(["lineage", "logical_outcome", "incident_id"], dropna=False)
        .size()
        .rename("n")
        .reset_index()
    )
    by_rows = stability_once(runs, incident, ["lineage"], 5)
    by_counts = stability_once(counts, counts["incident_id"], ["lineage"], 5, weight="n")
    pd.testing.assert_frame_equal(by_counts, by_rows)
    assert by_rows["runs_once"].tolist() == [
        by_rows["runs"].iloc[i] - 3 for i in range(2)
    ]  # each lineage holds 4 of the incident's 8 red runs: 3 leave


def test_a_job_whose_failure_is_an_incident_is_not_called_flaky():
    jobs = pd.DataFrame(
        {
            "run_id": [1, 2, 3],
            "logical_job": "e2e_ppo",
            "logical_outcome": ["flaky", "flaky", "pass"],
            "red_job_id": [11.0, 21.0, float("nan")],
            "verdict": ["flaky", "flaky", None],
        }
    )
    members = pd.DataFrame(
        {"run_id": [1], "run_attempt": [1], "job_id": [11], "incident_id": [HUB]}
    )
    assert job_incidents(jobs, members).tolist()[0] == HUB
    red = jobs.iloc[:2]
    out = verdicts_once(red, members)
    assert out["verdict"].tolist() == ["flaky", "flaky"]  # as today
    assert out["verdict_once"].tolist() == ["incident", "flaky"]
    assert out["incident_id"].tolist()[0] == HUB and pd.isna(out["incident_id"].tolist()[1])
