"""bench.real_logs scores any JSONL set in the development set's format (these rows are ours)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.real_logs import measure_set, recall_precision, report, score

ROWS = [
    {
        "id": "ours-cuda-oom",
        "label": "oom",
        "secondary_label": None,
        "text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    },
    {
        "id": "ours-no-module",
        "label": "missing_dependency",
        "secondary_label": None,
        "text": "ModuleNotFoundError: No module named 'flash_attn'",
    },
    {
        "id": "ours-code-bug",
        "label": "other",
        "secondary_label": "test_failure",
        "text": "Traceback (most recent call last):\nValueError: bad shape in collate",
    },
    {
        "id": "ours-unseen",
        "label": "network",
        "secondary_label": "infra",
        "text": "the mirror took the day off",
    },
]


def _write(tmp_path, rows):
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_scores_labels_with_other_as_unknown(tmp_path):
    cases = {c.id: c for c in score(_write(tmp_path, ROWS))}
    assert cases["ours-cuda-oom"].exact and cases["ours-no-module"].exact
    assert cases["ours-code-bug"].label == "unknown" and cases["ours-code-bug"].exact
    assert not cases["ours-unseen"].exact and cases["ours-unseen"].got == "unknown"
    table = recall_precision(list(cases.values()))
    assert table["network"] == (0.0, None, 1)
    assert table["unknown"][1] == 0.5  # two picked unknown, one of them right


def test_report_lists_every_miss_and_the_rows_meet_or_miss_their_targets(tmp_path):
    path = _write(tmp_path, ROWS)
    text = report(score(path))
    assert text.startswith("exact 3/4 = 75.0%") and "- ours-unseen: network -> unknown" in text
    exact, recall, precision = measure_set(path)
    assert exact["value"] == "3/4 = 75.0%" and exact["met"] is False
    assert "ours-unseen (network -> unknown, rule 'error-looking line')" in exact["note"]
    assert "  why: no rule of network matched; 'error-looking line' won: nothing" in text
    assert recall["value"] == "network 0%" and recall["met"] is False
    # unknown's 50% is not counted: a named category's precision is (both named ones right)
    assert precision["value"] == "oom 100%" and precision["met"] is True


def test_an_absent_set_is_said_not_scored(tmp_path):
    (row,) = measure_set(tmp_path / "absent.jsonl")
    assert row["value"] == "not measured" and row["met"] is None and "absent" in row["note"]


def test_our_real_style_set_stays_right():
    """tests/fixtures/realstyle-ours.jsonl: 54 excerpts in the real-log format, written by us
    (not real logs) without sight of the rules, labelled by the procedure. Scored 49/54 before
    the rules saw it; kept as a regression set of hard forms."""
    cases = score(Path(__file__).parent / "fixtures" / "realstyle-ours.jsonl")
    assert len(cases) == 54
    assert [f"{c.id}: {c.label} -> {c.got} ({c.reason})" for c in cases if not c.exact] == []
