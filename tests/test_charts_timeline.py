"""The Overview's stability timeline (#19): small multiples, a row per lineage on one time axis,
with the change events as numbered markers and a legend of those numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard import charts

LINEAGES = ["fully_async", "one_step_off_policy", "v1_separate_async"]
WEEKS = pd.date_range("2026-05-04", periods=8, freq="7D", tz="UTC")


@pytest.fixture
def table() -> pd.DataFrame:
    """The shape of analytics.once.stability_once(..., ["lineage", "period"]), three lineages,
    rows shuffled; counted once, a run fewer and a rate 0.1 higher."""
    rows = []
    for k, lineage in enumerate(LINEAGES):
        for w, week in enumerate(WEEKS):
            runs = 10 + k
            rate = (w + k) % 5 / 5
            rows.append(
                {
                    "lineage": lineage,
                    "period": week,
                    "runs": runs,
                    "pass": round(rate * runs),
                    "success_rate": rate,
                    "success_rate_low": max(0.0, rate - 0.2),
                    "success_rate_high": min(1.0, rate + 0.2),
                    "enough_data": True,
                    "runs_once": runs - 1,
                    "success_rate_once": rate + 0.1,
                }
            )
    return pd.DataFrame(rows).sample(frac=1, random_state=7).reset_index(drop=True)


@pytest.fixture
def events() -> pd.DataFrame:
    """Three events inside the weeks (not in date order) and one after them."""
    return pd.DataFrame(
        {
            "event_date": pd.to_datetime(
                ["2026-06-10", "2026-05-20", "2026-09-30", "2026-06-03"], utc=True
            ),
            "event_pr": pd.array([7357, None, 9999, 6568], dtype="Int64"),
            "event_title": ["migrate to v1", "runner image bump", "outside", "stabilize main CIs"],
            "event_kind": ["pr", "infra", "pr", "pr"],
            "event_lineages": [None, None, None, ("fully_async",)],
        }
    )


def _numbers(figure) -> list[str]:
    """The event numbers drawn on the figure: its annotations that are not row titles."""
    return [a.text for a in figure.layout.annotations if a.text not in LINEAGES]


def test_one_subplot_per_lineage_on_a_shared_time_axis(table, events) -> None:
    figure = charts.stability_timeline(table, events)
    y_axes = sorted(k for k in figure.layout.to_plotly_json() if k.startswith("yaxis"))
    assert len(y_axes) == 3
    titles = [a.text for a in figure.layout.annotations if a.text in LINEAGES]
    assert titles == LINEAGES  # one row title each, rows in name order
    tops = [figure.layout[axis].domain[1] for axis in ["yaxis", "yaxis2", "yaxis3"]]
    assert tops == sorted(tops, reverse=True)  # row 1 at the top
    for row, lineage in enumerate(LINEAGES, start=1):
        traces = [t for t in figure.data if t.name and t.name.startswith(lineage)]
        assert len(traces) == 3  # the band, the line and the line counted once
        assert {t.yaxis for t in traces} == {"y" if row == 1 else f"y{row}"}
        line = next(t for t in traces if t.name == lineage)
        assert len(line.x) == len(WEEKS)
        assert list(line.customdata[:, 0]) == [10 + row - 1] * len(WEEKS)  # runs in the hover
        assert "n=%{customdata[0]}" in line.hovertemplate
        once = next(t for t in traces if t.name == f"{lineage} counted once")
        assert once.line.dash == "dash" and list(once.x) == list(line.x)
        assert list(once.y) == pytest.approx([y + 0.1 for y in line.y])
        assert list(line.customdata[:, 4]) == [10 + row - 2] * len(WEEKS)  # runs counted once
        assert "counted once: %{customdata[3]:.0%} n=%{customdata[4]}" in line.hovertemplate
    for axis in ["yaxis", "yaxis2", "yaxis3"]:
        assert tuple(figure.layout[axis].range) == (0, 1)
    assert [figure.layout[axis].matches for axis in ["xaxis", "xaxis2"]] == ["x3", "x3"]
    assert figure.layout.height >= 140 * 3


def test_events_numbered_in_date_order_with_a_legend(table, events) -> None:
    figure = charts.stability_timeline(table, events)
    numbers = [a for a in figure.layout.annotations if a.text not in LINEAGES]
    assert [a.text for a in numbers] == ["1", "2", "3"]
    dates = [pd.Timestamp(a.x) for a in numbers]
    assert dates == sorted(dates)
    assert all(a.yref == "paper" and a.y >= 1 for a in numbers)  # once, at the top
    # a dotted line per event on every row; nothing at the event after the range
    lines = [s for s in figure.layout.shapes if s.line.dash == "dot"]
    assert len(lines) == 3 * 3
    assert {s.yref.split(" ")[0] for s in lines} == {"y", "y2", "y3"}
    outside = pd.Timestamp("2026-09-30", tz="UTC")
    assert all(pd.Timestamp(s.x0) != outside for s in lines)
    assert "#9999" not in " ".join(a.hovertext or "" for a in figure.layout.annotations)

    legend = charts.timeline_events(table, events)
    assert list(legend.columns) == ["number", "date", "pr", "kind", "title"]
    assert [str(n) for n in legend["number"]] == [a.text for a in numbers]
    assert list(legend["date"]) == list(
        pd.to_datetime(["2026-05-20", "2026-06-03", "2026-06-10"], utc=True)
    )
    assert [pd.Timestamp(a.x) for a in numbers] == list(legend["date"])
    assert legend["pr"].tolist()[1:] == [6568, 7357] and pd.isna(legend["pr"].iloc[0])
    assert legend["title"].tolist() == ["runner image bump", "stabilize main CIs", "migrate to v1"]
    assert 9999 not in legend["pr"].dropna().tolist()


def test_event_legend_is_the_numbering_of_a_range(events) -> None:
    legend = charts.event_legend(events, WEEKS[0], WEEKS[-1])
    assert legend["number"].tolist() == [1, 2, 3]
    later = charts.event_legend(
        events, pd.Timestamp("2026-06-01", tz="UTC"), WEEKS[-1] + WEEKS.freq * 20
    )
    assert later["number"].tolist() == [1, 2, 3] and later["pr"].tolist() == [6568, 7357, 9999]


def test_height_grows_with_the_lineages(table, events) -> None:
    six = pd.concat([table, table.assign(lineage="x_" + table["lineage"])], ignore_index=True)
    small = charts.stability_timeline(table, events)
    big = charts.stability_timeline(six, events)
    assert big.layout.height - small.layout.height >= 3 * 140
    assert sum(k.startswith("yaxis") for k in big.layout.to_plotly_json()) == 6


def test_categories_over_time_keeps_its_event_labels(events) -> None:
    counts = pd.DataFrame({"period": WEEKS[:6], "category": "oom", "failures": range(6)})
    figure = charts.categories_over_time(counts, events)
    assert [a.text for a in figure.layout.annotations] == ["infra", "#6568"]
    assert len(figure.layout.shapes) == 2
