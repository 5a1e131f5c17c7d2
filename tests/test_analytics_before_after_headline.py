"""The one sentence that leads each event on the Migrations page, on hand-computed counts.

Wilson 95% intervals: 18/20 = 0.90 [0.70, 0.97], 10/20 = 0.50 [0.30, 0.70] (centre 0.5, half
1.96 * sqrt(0.25/20 + 1.96**2/1600) / (1 + 1.96**2/20) = 0.20), 8/10 = 0.80 [0.49, 0.94],
7/10 = 0.70 [0.40, 0.89], 10/12 = 0.83 [0.55, 0.95], 7/12 = 0.58 [0.32, 0.81].
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import fisher_exact

from analytics.before_after import headline, headlines
from tests.support.settings import analysis


def _row(
    before: tuple[int, int, int],
    after: tuple[int, int, int],
    *,
    lineage: str = "e2e_v1_separate_async",
    pr: float | None = 7357,
    title: str = "migrate fully_async to v1",
    kind: str = "migration",
) -> dict[str, object]:
    """One before_after row; ``before`` and ``after``: (pass, flaky, fail)."""
    row: dict[str, object] = {
        "event_pr": pr,
        "event_title": title,
        "event_kind": kind,
        "lineage": lineage,
    }
    for side, (passed, flaky, fail) in (("before", before), ("after", after)):
        counts = {"runs": passed + flaky + fail, "pass": passed, "flaky": flaky, "fail": fail}
        row |= {f"{side}_{c}": n for c, n in counts.items()}
        row |= {f"{side}_{c}_once": n for c, n in counts.items()}  # no incident
        row |= {f"{side}_excluded": 1}  # counts in no denominator
        row |= {f"{side}_incident_id": None, f"{side}_incident_red": 0}
    return row


def _rows(*rows: dict[str, object]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_a_significant_drop_says_worse_with_its_p():
    # 18 of 20 passed before, 10 of 20 after (flaky counts as not passing on the first try):
    # Fisher [[18, 2], [10, 10]], two-sided p = 0.0138
    assert fisher_exact([[18, 2], [10, 10]]).pvalue == pytest.approx(0.0138, abs=1e-4)
    sentence = headline(_rows(_row((18, 1, 1), (10, 4, 6))), analysis(window_days=14, min_runs=5))
    assert sentence == (
        "#7357: successors 0.50 [0.30, 0.70] n=20 in the 14 days after, "
        "vs predecessors 0.90 [0.70, 0.97] n=20 in the 14 days before; "
        "significant change, worse (p=0.014)"
    )


def test_a_significant_rise_says_better():
    sentence = headline(_rows(_row((10, 4, 6), (18, 1, 1))), analysis(window_days=14, min_runs=5))
    assert sentence.endswith("; significant change, better (p=0.014)")


def test_no_significant_change_names_the_p_and_uses_before_after_off_a_migration():
    # [[8, 2], [7, 3]]: every table with these margins is at most as likely: p = 1
    rows = _rows(_row((8, 0, 2), (7, 1, 2), pr=None, title="pin vllm", kind="fix"))
    assert headline(rows, analysis(window_days=7, min_runs=5)) == (
        "pin vllm: after 0.70 [0.40, 0.89] n=10 in the 7 days after, "
        "vs before 0.80 [0.49, 0.94] n=10 in the 7 days before; "
        "no significant change (p=1.00)"
    )


def test_a_side_under_min_runs_has_not_enough_data_and_no_verdict():
    sentence = headline(_rows(_row((3, 0, 0), (2, 4, 4))), analysis(window_days=14, min_runs=5))
    assert sentence == (
        "#7357: successors 0.20 [0.06, 0.51] n=10 in the 14 days after, "
        "vs predecessors not enough data (n=3) in the 14 days before; "
        "not enough data to compare (a side has fewer than 5 runs)"
    )
    assert "significant" not in sentence and "p=" not in sentence


def test_several_lineages_are_pooled_counts_not_averaged_rates():
    # A: 9/10 before, 5/10 after; B: 1/2 before, 2/2 after. Averaged rates would say 0.70
    # before and 0.75 after (better); pooled counts say 10/12 = 0.83 before, 7/12 = 0.58 after,
    # Fisher [[10, 2], [7, 5]] p = 0.37.
    rows = _rows(
        _row((9, 0, 1), (5, 0, 5), lineage="A"),
        _row((1, 1, 0), (2, 0, 0), lineage="B"),
    )
    assert headline(rows, analysis(window_days=14, min_runs=5)) == (
        "#7357 (2 lineages pooled): successors 0.58 [0.32, 0.81] n=12 in the 14 days after, "
        "vs predecessors 0.83 [0.55, 0.95] n=12 in the 14 days before; "
        "no significant change (p=0.37)"
    )


def test_pooling_lets_small_lineages_reach_min_runs_together():
    # 3 + 3 runs a side: each lineage alone has too few, together they have 6
    rows = _rows(
        _row((3, 0, 0), (0, 0, 3), lineage="A"),
        _row((3, 0, 0), (0, 1, 2), lineage="B"),
    )
    sentence = headline(rows, analysis(window_days=14, min_runs=5))
    assert "successors 0.00 [0.00, 0.39] n=6" in sentence
    assert "predecessors 1.00 [0.61, 1.00] n=6" in sentence
    # [[6, 0], [0, 6]]: p = 2 / C(12, 6) = 0.0022
    assert sentence.endswith("; significant change, worse (p=0.0022)")


def test_no_rows_no_numbers():
    assert headline(_rows(), analysis(window_days=14)) == "No runs in the 14 days either side."


def test_a_pages_answers_pooled_together_say_what_each_alone_says():
    """The Migrations page rates every event's pooled counts in one frame, each event's rows
    found by their positions in the page's table: each event's sentence is still its own
    (its counts, its label, its migration words), an event without rows too."""
    settings = analysis(window_days=14, min_runs=5)
    table = _rows(
        _row((3, 0, 0), (0, 0, 3), lineage="A"),
        _row((18, 1, 1), (10, 4, 6)),
        _row((3, 0, 0), (2, 4, 4), pr=None, title="image bump", kind="image"),
        _row((3, 0, 0), (0, 1, 2), lineage="B"),
    )
    events = [np.array([1]), np.array([], dtype=int), np.array([0, 3]), np.array([2])]
    said = headlines(table, events, settings)
    assert said == [headline(table.iloc[rows].reset_index(drop=True), settings) for rows in events]
    assert said[0].startswith("#7357: successors 0.50 [0.30, 0.70] n=20 in the 14 days after")
    assert said[1] == "No runs in the 14 days either side."
    assert said[2].startswith("#7357 (2 lineages pooled): successors 0.00 [0.00, 0.39] n=6")
    assert said[2].endswith("; significant change, worse (p=0.0022)")
    assert said[3].startswith("image bump: after ")
