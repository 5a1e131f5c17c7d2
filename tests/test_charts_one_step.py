"""Every chart of dashboard/charts.py is built in one step, from plain dicts, into the figure
the incremental Plotly calls built before (#49): make_subplots, update_layout and add_trace
each validated the whole figure again, which cost the Overview 0.2 s on every rerun. The
figures' JSON is frozen in tests/fixtures/charts/figures.json, written by those older
builders from the inputs below."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.subplots
import pytest

from dashboard import charts

FROZEN = Path(__file__).parent / "fixtures" / "charts" / "figures.json"
WEEKS = pd.date_range("2026-05-04", periods=6, freq="7D", tz="UTC")
LINEAGES = ["fully_async", "one_step_off_policy", "v1_separate_async"]


def _timeline() -> pd.DataFrame:
    """The stability table's shape: three lineages, a week with no run on the second."""
    rows = [
        {
            "lineage": lineage,
            "period": week,
            "runs": 0 if (k, w) == (1, 2) else 10 + k + w,
            "success_rate": (w + k) % 5 / 5,
            "success_rate_low": max(0.0, (w + k) % 5 / 5 - 0.2),
            "success_rate_high": min(1.0, (w + k) % 5 / 5 + 0.2),
            "runs_once": 9 + k + w,
            "success_rate_once": (w + k) % 5 / 5 + 0.05,
        }
        for k, lineage in enumerate(LINEAGES)
        for w, week in enumerate(WEEKS)
    ]
    return pd.DataFrame(rows).sample(frac=1, random_state=3).reset_index(drop=True)


def _events() -> pd.DataFrame:
    """Three events inside the weeks (one without a PR), one after them."""
    return pd.DataFrame(
        {
            "event_date": pd.to_datetime(
                ["2026-05-27", "2026-05-13", "2026-09-30", "2026-05-20"], utc=True
            ),
            "event_pr": pd.array([7357, None, 9999, 6568], dtype="Int64"),
            "event_title": ["migrate to v1", "runner image bump", "outside", "stabilize"],
            "event_kind": ["pr", "infra", "pr", "pr"],
            "event_lineages": [None, None, None, ("fully_async",)],
        }
    )


def _bands() -> pd.DataFrame:
    """The incident-lineages table's shape: one incident on two rows, one on a lineage the
    timeline does not show."""
    start = pd.to_datetime(["2026-05-14 13:00", "2026-05-14 13:00", "2026-06-01 02:00"], utc=True)
    return pd.DataFrame(
        {
            "id": ["a", "a", "b"],
            "lineage": ["v1_separate_async", "fully_async", "elsewhere"],
            "started_at": start,
            "ended_at": start + pd.Timedelta(hours=5),
            "label": ["HF Hub 503", "HF Hub 503", "OOM"],
            "category": ["network", "network", "oom"],
            "jobs": [23, 23, 4],
        }
    )


def _cells() -> pd.DataFrame:
    """The job-days table's shape: two jobs over three days, one day missing for one."""
    days = pd.to_datetime(["2026-05-04", "2026-05-05", "2026-05-06"], utc=True)
    return pd.DataFrame(
        {
            "logical_job": ["build", "build", "build", "test", "test"],
            "day": [days[0], days[1], days[2], days[0], days[2]],
            "state": ["green", "oom", "retry-green", "unknown", "green"],
            "runs": [3, 2, 1, 4, 5],
        }
    )


def _strip() -> pd.DataFrame:
    """The first-runs table's shape: two new workflows' first runs."""
    return pd.DataFrame(
        {
            "order": [1, 2, 3, 1, 2],
            "workflow_path": [".github/workflows/a.yml"] * 3 + [".github/workflows/b.yml"] * 2,
            "logical_outcome": ["pass", "fail", "flaky", "pass", "pass"],
            "created_at": pd.to_datetime(["2026-05-04 10:00"] * 5, utc=True),
            "failure_category": [None, "oom", None, None, None],
        }
    )


def _shift() -> pd.DataFrame:
    """The category-shift table's shape: a category only after the event."""
    return pd.DataFrame(
        {
            "failure_category": ["network", "oom", "unknown"],
            "before_share": [0.5, None, 0.5],
            "after_share": [0.25, 0.5, 0.25],
            "before_count": [2, 0, 2],
            "after_count": [1, 2, 1],
        }
    )


def _counts() -> pd.DataFrame:
    """The categories table's shape: failures per week by category."""
    return pd.DataFrame(
        {
            "period": [*WEEKS, *WEEKS[2:]],
            "category": ["oom"] * 6 + ["network"] * 4,
            "failures": [*range(6), 3, 1, 4, 1],
        }
    )


def _rates() -> pd.DataFrame:
    """A rate table's shape: five runners, surest first."""
    rate = pd.Series([0.4, 0.3, 0.2, 0.1, 0.05])
    return pd.DataFrame(
        {
            "runner_pool": ["a", "b", "c", 4, "e"],
            "fail_rate": rate,
            "fail_rate_low": rate / 2,
            "fail_rate_high": rate * 1.5,
            "runs": [10, 20, 30, 40, 50],
        }
    )


CHARTS: dict[str, Callable[[], go.Figure]] = {
    "stability_timeline": lambda: charts.stability_timeline(_timeline(), _events(), _bands()),
    "stability_timeline_no_bands": lambda: charts.stability_timeline(_timeline(), _events()),
    "stability_timeline_one_row": lambda: charts.stability_timeline(
        _timeline().query("lineage == 'fully_async'"), _events(), _bands()
    ),
    "stability_timeline_empty": lambda: charts.stability_timeline(
        _timeline().iloc[:0], _events(), _bands().iloc[:0]
    ),
    "job_day_heatmap": lambda: charts.job_day_heatmap(_cells()),
    "first_runs_strip": lambda: charts.first_runs_strip(_strip()),
    "category_mix": lambda: charts.category_mix(_shift()),
    "categories_over_time": lambda: charts.categories_over_time(_counts(), _events()),
    "rate_bars": lambda: charts.rate_bars(_rates(), "runner_pool", "fail_rate", limit=4),
}


def figure_json(figure: go.Figure) -> dict[str, Any]:
    """The figure as Streamlit sends it to the browser, without Plotly's template (the
    default template depends on what imported Streamlit)."""
    sent = json.loads(figure.to_json())
    sent["layout"].pop("template", None)
    return sent


@pytest.mark.parametrize("name", CHARTS)
def test_the_figure_is_the_one_the_incremental_builder_drew(name: str) -> None:
    assert figure_json(CHARTS[name]()) == json.loads(FROZEN.read_text(encoding="utf-8"))[name]


def test_no_chart_revalidates_its_figure_step_by_step(monkeypatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a figure built step by step")

    for name in ("add_trace", "add_traces", "update_layout", "update_yaxes", "update_annotations"):
        monkeypatch.setattr(go.Figure, name, refused)
    monkeypatch.setattr(plotly.subplots, "make_subplots", refused)
    monkeypatch.setattr(charts, "make_subplots", refused, raising=False)
    assert [len(build().data) for build in CHARTS.values()] == [11, 9, 4, 0, 1, 3, 2, 2, 1]


def test_the_demo_timeline_is_laid_out_as_make_subplots_lays_it_out(demo_db: str) -> None:
    """On the demo's real tables: every lineage's row has the axes, domain and title
    make_subplots gives it, its points are the table's, and every event and incident of the
    range is drawn."""
    from dataclasses import replace

    from dashboard.filters import Filters
    from dashboard.loaders import shared
    from reports import tables

    repo = "verl-project/verl"
    asked = shared.query(Filters(repo, *shared.day_span(demo_db, repo), (), "default"))
    engine, project = shared.engine(demo_db), shared.project(repo)
    table = tables.build(engine, project, "stability", replace(asked, period="W"))
    bands = tables.build(engine, project, "incident-lineages", asked)
    events = shared.events(demo_db, repo)
    built = charts.stability_timeline(table, events, bands)
    figure = figure_json(built)
    lineages = sorted(table["lineage"].unique())
    rows = len(lineages)
    assert rows > 3 and len(bands) and len(charts.timeline_events(table, events))
    plot = figure["layout"]["height"] - charts.TIMELINE_MARGIN["t"] - charts.TIMELINE_MARGIN["b"]
    grid = plotly.subplots.make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        subplot_titles=lineages,
        vertical_spacing=charts.ROW_GAP / plot,
    ).to_plotly_json()["layout"]
    for axis, expected in grid.items():
        if axis.startswith(("xaxis", "yaxis")):
            assert {k: figure["layout"][axis][k] for k in expected} == expected, axis
    titles = [a for a in figure["layout"]["annotations"] if a["text"] in lineages]
    assert [(a["text"], a["y"]) for a in titles] == [
        (a["text"], a["y"]) for a in grid["annotations"]
    ]
    for row, lineage in enumerate(lineages, start=1):
        line = next(t for t in built.data if t.name == lineage)
        points = table[(table["lineage"] == lineage) & (table["runs"] > 0)].sort_values("period")
        assert line.yaxis == ("y" if row == 1 else f"y{row}")
        assert list(line.y) == pytest.approx(points["success_rate"].tolist())
        assert list(pd.to_datetime(line.x, utc=True)) == list(points["period"])
    hit = bands[bands["lineage"].isin(lineages)]
    markers = [t for t in figure["data"] if t["name"].endswith(" incidents")]
    assert len(figure["data"]) == 3 * rows + hit["lineage"].nunique() == 3 * rows + len(markers)
    shapes = figure["layout"]["shapes"]
    assert len(shapes) == len(charts.timeline_events(table, events)) * rows + len(hit)
