"""Thin data (#46): every report table and every dashboard page on an empty database, on one
holding a single run, on the nightly's budget-stopped first night and on a window with no run:
nothing crashes, and each says what is missing in its own words. The loops run over the
registries (``reports.tables.TABLES``, ``dashboard/views``), so a new table or page fails here
until it is given its thin-data expectation."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analytics.rates import NOT_ENOUGH_DATA, short_of_data, stability, verdict_label
from analytics.text import basename, filled, formatted
from ciflake.cli import cli
from dashboard import sections
from reports.tables import TABLES
from tests.conftest import THIN_DATA

# pandas 3 warns of what pandas 4 refuses (a string filled into a float column): an error here
pytestmark = pytest.mark.filterwarnings("error::pandas.errors.Pandas4Warning")

ONE_RUN_ID = "17623536655"  # tests.support.collected.ONE_RUN: an OOM failure of 2026-11-06
Rows = list[dict[str, str]]


def _runs(rows: Rows, column: str) -> int:
    return sum(int(row[column]) for row in rows)


# What each table holds of the single run; a new table must say what it gives here.
ONE_RUN: dict[str, Callable[[Rows], bool]] = {
    "runs": lambda rows: (
        [(r["run_id"], r["failure_category"]) for r in rows] == [(ONE_RUN_ID, "oom")]
    ),
    "jobs": lambda rows: (
        {r["run_id"] for r in rows} == {ONE_RUN_ID}
        and [r["failure_category"] for r in rows if r["failure_category"]] == ["oom"]
    ),
    "failures": lambda rows: [(r["run_id"], r["category"]) for r in rows] == [(ONE_RUN_ID, "oom")],
    "signatures": lambda rows: [(r["category"], r["failures"]) for r in rows] == [("oom", "1")],
    "categories": lambda rows: [(r["category"], r["failures"]) for r in rows] == [("oom", "1")],
    "unknown-stages": lambda rows: rows == [],  # the OOM is known
    "failure-bases": lambda rows: [(r["failures"], r["share"]) for r in rows] == [("1", "1.0")],
    "known-issues": lambda rows: rows == [],  # nobody linked or corrected a signature yet
    "flaky-jobs": lambda rows: (
        len(rows) == 4 and {(r["runs"], r["enough_data"]) for r in rows} == {("1", "False")}
    ),
    "verdicts": lambda rows: [(r["run_id"], r["category"]) for r in rows] == [(ONE_RUN_ID, "oom")],
    # the configured events' rows, each window counting the one run at most once
    "before-after": lambda rows: (
        len(rows) > 0 and _runs(rows, "before_runs") + _runs(rows, "after_runs") <= 1
    ),
    "migration-answers": lambda rows: _runs(rows, "before_runs") + _runs(rows, "after_runs") <= 1,
    "category-shift": lambda rows: rows == [],  # its failure is before every event's windows
    "basis-mix": lambda rows: _runs(rows, "before_red") + _runs(rows, "after_red") == 0,
    "first-runs": lambda rows: rows == [],
    "coverage-lost": lambda rows: rows == [],
    "changepoints": lambda rows: rows == [],
    "runner-pools": lambda rows: len(rows) > 0 and all(r["enough_data"] == "False" for r in rows),
    "incidents": lambda rows: rows == [],  # one failure is no burst
    "health": lambda rows: [(r["repaired"], r["open"]) for r in rows] == [("0", "1")],
    "status": lambda rows: (
        {r["level"] for r in rows} == {"lineage", "workflow"}
        and all((r["runs"], r["label"]) == ("1", f"{NOT_ENOUGH_DATA} (n=1)") for r in rows)
    ),
    "stability": lambda rows: (
        [(r["runs"], r["fail"], r["enough_data"]) for r in rows] == [("1", "1", "False")]
    ),
    "incident-lineages": lambda rows: rows == [],
    "job-days": lambda rows: len(rows) > 0 and "oom" in {r["state"] for r in rows},
    "repair": lambda rows: [(r["repaired"], r["open"]) for r in rows] == [("0", "1")],
    "runners": lambda rows: len(rows) > 0 and all(r["enough_data"] == "False" for r in rows),
    "environments": lambda rows: rows == [],  # its log prints no version
    # the nightly summary's: without an event, one side, the runs since --since
    "night-headline": lambda rows: (
        {(r["side"], r["runs"]) for r in rows} == {("since", "1")} and len(rows) == 2
    ),
    "night-runs": lambda rows: (
        [r["runs"] for r in rows] == ["1", "1"] and rows[0]["lineage"] == "(all)"
    ),
    "night-health": lambda rows: [(r["side"], r["open"]) for r in rows] == [("since", "1")],
    "night-failures": lambda rows: [r["category"] for r in rows] == ["oom"],
    "stale": lambda rows: rows == [],  # one run has no rhythm to miss
    "silent": lambda rows: rows == [],
}
# Rows an empty database still has: those of the configured events, with no run counted.
FROM_CONFIG = {
    "before-after": ("before_runs", "after_runs"),
    "migration-answers": ("before_runs", "after_runs"),
    "basis-mix": ("before_red", "after_red"),
}
# Tables that a first night of verl (its event windows first) leaves empty: no workflow has
# missed its rhythm yet.
FIRST_NIGHT_EMPTY = {
    "coverage-lost",
    "changepoints",
    "known-issues",
    "incidents",
    "incident-lineages",
    "environments",
    "first-runs",
    "stale",
    "silent",
}


def _export(runner, url: str, table: str, out: Path) -> tuple[str, Rows]:
    result = runner.invoke(cli, ["--db", url, "export", table, "--out", str(out)])
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == TABLES[table].columns
        return result.stdout, list(reader)


@pytest.mark.parametrize("kind", THIN_DATA)
def test_every_report_table_on_thin_data(thin_db, kind, runner, tmp_path):
    """Each table of the registry: its documented header, the rows thin data gives, and the
    command's words for what is missing (no runs yet; a backfill in progress)."""
    assert set(ONE_RUN) == set(TABLES), "say what a new table holds of one run"
    url = thin_db(kind)
    for name in TABLES:
        said, rows = _export(runner, url, name, tmp_path / f"{name}.csv")
        assert f"{name}.csv: {len(rows)} rows" in said, said
        if kind == "empty":
            assert "no runs collected yet for verl-project/verl: run `ciflake collect`" in said
            counted = FROM_CONFIG.get(name, ())
            assert (len(rows) > 0) == bool(counted), name
            assert all(_runs(rows, column) == 0 for column in counted), name
        elif kind == "one run":
            assert said.strip().endswith("rows"), said  # collected from its creation on
            assert ONE_RUN[name](rows), (name, rows)
        else:
            assert "; backfill in progress: 11 workflows not collected yet between" in said
            assert (len(rows) == 0) == (name in FIRST_NIGHT_EMPTY), (name, len(rows))


def test_a_range_after_every_event_has_no_first_runs(thin_db, runner, tmp_path):
    """No change event in the range: no successor, an empty table (it was a traceback)."""
    url = thin_db("one run")
    args = ["--db", url, "export", "first-runs", "--since", "2027-01-01"]
    result = runner.invoke(cli, [*args, "--out", str(tmp_path / "first.csv")])
    assert result.exit_code == 0, result.output
    assert "first.csv: 0 rows" in result.stdout, result.stdout


APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
PAGES = sorted(p.stem for p in (APP.parent / "views").glob("*.py"))
EMPTY_DB = "No runs collected yet. Run `ciflake collect --once`."
BACKFILL = "Backfill in progress: 11 workflows not collected yet between"
AROUND_7357 = "No runs yet around #7357: no lineage has a counted run in the 14 days either side"
# Per thin-data case, what each page says of what is missing (in any of its messages).
WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    "one run": {
        "overview": ("last 14 days: not enough data (n=1)", "No change event in the range."),
        "migrations": (AROUND_7357,),
        "failures": ("n=1 failure", "No failure of unknown cause in the range."),
        "flaky_jobs": (f"{NOT_ENOUGH_DATA} (n=1): no row has the 5 counted runs",),
        # its two jobs ran on GitHub-hosted VMs: one pool and one runner row, (GitHub-hosted)
        "runners": (f"{NOT_ENOUGH_DATA} (n=2)",),
        "export": ("runs of 2026-11-06 to 2026-11-06, scope default",),
    },
    "empty window": {  # the one run's database, pull requests only: no run in scope
        "overview": ("No runs match the filters.",),
        "migrations": (AROUND_7357,),
        "failures": ("No failures in the range and scope: no signature",),
        "flaky_jobs": ("No logical job ran in the range and scope: nothing to rank.",),
        "runners": ("No job ran in the range and scope: no runner to rate.",),
        "export": ("runs of 2026-11-06 to 2026-11-06, scope pr",),
    },
    "first night": {
        "overview": (BACKFILL,),
        "migrations": (BACKFILL, f"{AROUND_7357} of 2026-08-12; backfill in progress"),
        "failures": (BACKFILL,),
        "flaky_jobs": (BACKFILL,),
        "runners": (BACKFILL,),
        "export": (BACKFILL,),
    },
}


def _said(app: AppTest) -> str:
    kinds = ("error", "warning", "info", "caption", "markdown")
    return "\n".join(str(element.value) for kind in kinds for element in getattr(app, kind))


def _empty_figures(app: AppTest) -> list[str]:
    """The titles (or indices) of the page's Plotly figures that plot nothing."""
    figures = [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]
    return [
        str(i)
        for i, f in enumerate(figures)
        if not any(len(t.get("x", [])) or len(t.get("z", [])) for t in f["data"])
    ]


@pytest.mark.parametrize("case", ["empty", "one run", "empty window", "first night"])
def test_every_page_on_thin_data(thin_db, case, monkeypatch):
    """Every page of dashboard/views renders without an exception, draws no empty chart and
    says what is missing: the command to run, not enough data, no run in the window, the
    backfill in progress."""
    assert case == "empty" or set(WORDS[case]) == set(PAGES), "give a new page its words"
    monkeypatch.setenv("CIFLAKE_DB_URL", thin_db("one run" if case == "empty window" else case))
    app = AppTest.from_file(str(APP), default_timeout=120)
    if case == "empty window":
        app.session_state["scope"] = "pr"
    app.run()
    for page in PAGES:
        said = ""
        for section in sections.walked(app, page):  # every section of the page, in turn
            assert not app.exception, (page, [e.value for e in app.exception])
            said += _said(section)
            assert not _empty_figures(section), page
        expected = (EMPTY_DB,) if case == "empty" else WORDS[case][page]
        for words in expected:
            assert words in said, (page, words, said)


def test_text_cells_stay_text_on_empty_and_missing_values():
    """The pandas-3 traps in one place (analytics.text): an empty float column formatted
    stays text, so labels built from it concatenate; missing values get the words given."""
    empty = pd.Series([], dtype=float)
    assert (formatted(empty, "{:.2f}") + " n=").tolist() == []
    assert formatted(pd.Series([0.5, None]), "{:.0%}").tolist() == ["50%", "nan%"]
    assert formatted(pd.Series([7357, None], dtype="Int64"), "#{:.0f} ", "").tolist() == [
        "#7357 ",
        "",
    ]
    assert filled(pd.Series([None, None]), "–").tolist() == ["–", "–"]
    assert (filled(empty, "–") + "x").tolist() == []
    assert basename(pd.Series([".github/workflows/a.yml", None])).tolist()[0] == "a.yml"
    assert basename(empty).tolist() == []


def test_verdict_labels_of_no_group_and_of_one_run():
    """The summary's crash on its first night (#46): no group gives no label, not a
    ufunc error; a group of one run is "not enough data (n=1)"."""
    outcomes = pd.DataFrame({"lineage": pd.Series([], dtype=str), "logical_outcome": []})
    none = stability(outcomes, ["lineage"], 5)
    assert verdict_label(none).tolist() == [] and short_of_data(none, 5) is None
    one = stability(pd.DataFrame({"lineage": ["a"], "logical_outcome": ["fail"]}), ["lineage"], 5)
    assert verdict_label(one).tolist() == [f"{NOT_ENOUGH_DATA} (n=1)"]
    assert short_of_data(one, 5) == (
        f"{NOT_ENOUGH_DATA} (n=1): no row has the 5 counted runs a verdict needs, so the "
        "rates below are no ranking yet."
    )
