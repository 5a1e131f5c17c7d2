"""examples/nightly-summary.yml keeps the database across nights and collects within a budget."""

from __future__ import annotations

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parent.parent / "examples" / "nightly-summary.yml"


def _steps() -> list[dict]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (job,) = data["jobs"].values()
    return job["steps"]


def test_the_database_is_saved_even_when_the_night_is_cut_off() -> None:
    steps = _steps()
    saves = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache/save")]
    assert len(saves) == 1 and saves[0].get("if") == "always()"
    restore = next(i for i, s in enumerate(steps) if "cache/restore" in str(s.get("uses", "")))
    collect = next(i for i, s in enumerate(steps) if "ciflake collect" in str(s.get("run", "")))
    assert restore < collect < steps.index(saves[0])
    assert saves[0]["with"]["path"] == steps[restore]["with"]["path"]


def test_the_collect_has_a_request_budget_under_a_workflow_tokens_hour() -> None:
    (collect,) = [s["run"] for s in _steps() if "ciflake collect" in str(s.get("run", ""))]
    words = collect.split()
    budget = int(words[words.index("--max-requests") + 1])
    assert 0 < budget < 1000
