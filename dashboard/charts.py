"""Plotly figure builders: pure functions of DataFrames, so they are tested without Streamlit.

Every time chart draws the change events as labelled vertical lines (DESIGN.md); the
stability timeline numbers them, and event_legend is the table of those numbers.

Each figure is built in one step from plain dicts (``_figure``): Plotly validates the whole
figure again on every make_subplots, add_trace or update_layout, which cost the Overview
0.2 s of its every rerun for one chart; built from its dict, the same figure takes a fifth."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from analytics.text import basename
from store.vocabulary import CATEGORIES

OUTCOME_COLOURS = {"pass": "#2e7d32", "flaky": "#9ccc65", "fail": "#c62828", "excluded": "#bdbdbd"}
# Red-to-orange shades, one per failure category, in the vocabulary's order; ``unknown`` grey.
CATEGORY_COLOURS = dict(
    zip(
        CATEGORIES,
        [
            "#b71c1c",
            "#e65100",
            "#6a1b9a",
            "#ad1457",
            "#f57f17",
            "#4e342e",
            "#283593",
            "#d32f2f",
            "#455a64",
            "#9e9e9e",  # unknown: the largest slice, and no alarm: a neutral grey
        ],
        strict=True,
    )
)
GRID_STATES = {"green": "#2e7d32", "retry-green": "#9ccc65", **CATEGORY_COLOURS}


def _figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """The figure of ``data`` (traces as dicts, each with its ``type``) and ``layout`` (its
    axes, shapes and annotations included), validated once."""
    return go.Figure({"data": data, "layout": layout})


def _axis(row: int) -> str:
    """The suffix of a subplot row's axes: ``x``/``y`` for the first row, ``x2``/``y2``..."""
    return str(row) if row > 1 else ""


def event_legend(events: pd.DataFrame, first: object, last: object) -> pd.DataFrame:
    """The change events inside [first, last], numbered 1, 2, 3... in date order: one row each
    with number, date (UTC), pr (Int64, NA without a PR), kind and title. The one numbering of
    the charts' event markers and of the legend printed under them."""
    inside = events[(events["event_date"] >= first) & (events["event_date"] <= last)]
    inside = inside.sort_values("event_date", kind="stable").reset_index(drop=True)
    return pd.DataFrame(
        {
            "number": range(1, len(inside) + 1),
            "date": inside["event_date"],
            "pr": inside["event_pr"].astype("Int64"),
            "kind": inside["event_kind"],
            "title": inside["event_title"],
        }
    )


def _event_hover(event: object) -> str:
    """``"#7357 migrate ... (2026-08-12)"``: an event's PR, title and date."""
    pr = f"#{event.pr} " if pd.notna(event.pr) else ""
    return f"{pr}{event.title} ({event.date:%Y-%m-%d})"


def _event_lines(
    events: pd.DataFrame, first: object, last: object
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(shapes, annotations): a dotted vertical line and a "#PR" label for each event inside
    [first, last]."""
    shown = list(event_legend(events, first, last).itertuples())
    lines = [_event_line(event.date, "x", "y domain") for event in shown]
    labels = [
        {
            "x": event.date,
            "y": 1.0,
            "yref": "paper",
            "text": f"#{event.pr}" if pd.notna(event.pr) else event.kind,
            "hovertext": _event_hover(event),
            "showarrow": False,
            "textangle": -90,
            "xanchor": "right",
            "yanchor": "top",
            "font": {"size": 10},
        }
        for event in shown
    ]
    return lines, labels


def _event_line(date: object, xref: str, yref: str) -> dict:
    """A dotted vertical line at ``date`` across the axis domain ``yref``."""
    return {
        "type": "line",
        "x0": date,
        "x1": date,
        "xref": xref,
        "y0": 0,
        "y1": 1,
        "yref": yref,
        "line": {"dash": "dot", "color": "#616161", "width": 1},
    }


ROW_HEIGHT = 160  # px per lineage in the stability timeline
ROW_GAP = 36  # px between its rows (room for the next row's title)
TIMELINE_MARGIN = {"t": 56, "b": 40, "l": 50, "r": 20}


def _numbered_event_lines(
    legend: pd.DataFrame, rows: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(shapes, annotations): each legend event as a dotted line on every one of ``rows`` rows,
    its number drawn once above the top."""
    shapes = [
        _event_line(event.date, f"x{_axis(row)}", f"y{_axis(row)} domain")
        for event in legend.itertuples()
        for row in range(1, rows + 1)
    ]
    numbers = [
        {
            "x": event.date,
            "xref": "x",
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "yshift": 20,
            "text": str(event.number),
            "hovertext": _event_hover(event),
            "showarrow": False,
            "font": {"size": 11, "color": "#212121"},
            "bgcolor": "#ffffff",
            "bordercolor": "#616161",
            "borderwidth": 1,
            "borderpad": 2,
        }
        for event in legend.itertuples()
    ]
    return shapes, numbers


INCIDENT_COLOUR = "#c62828"


def _incident_bands(
    bands: pd.DataFrame, lineages: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(shapes, traces): each incident as a shaded band over its span on the rows of the
    lineages it hit, and a marker at its start that names it on hover: a band of a few hours
    is a hairline on a year's axis, the marker stays findable."""
    rows = {lineage: row for row, lineage in enumerate(lineages, start=1)}
    shown = bands[bands["lineage"].isin(rows)]
    shapes = [
        {
            "type": "rect",
            "x0": band.started_at,
            "x1": band.ended_at,
            "xref": f"x{_axis(rows[band.lineage])}",
            "y0": 0,
            "y1": 1,
            "yref": f"y{_axis(rows[band.lineage])} domain",
            "fillcolor": INCIDENT_COLOUR,
            "opacity": 0.18,
            "layer": "below",
            "line": {"color": INCIDENT_COLOUR, "width": 1},
        }
        for band in shown.itertuples()
    ]
    markers = [
        {
            "type": "scatter",
            "x": chosen["started_at"],
            "y": [0.04] * len(chosen),
            "mode": "markers",
            "name": f"{lineage} incidents",
            "showlegend": False,
            "marker": {"symbol": "triangle-up", "size": 9, "color": INCIDENT_COLOUR},
            "text": _incident_hover(chosen),
            "hovertemplate": "%{text}<extra></extra>",
            "xaxis": f"x{_axis(rows[str(lineage)])}",
            "yaxis": f"y{_axis(rows[str(lineage)])}",
        }
        for lineage, chosen in shown.groupby("lineage")
    ]
    return shapes, markers


def _incident_hover(incidents: pd.DataFrame) -> pd.Series:
    """``"incident: HF Hub 503 (network)<br>2026-08-14 13:05 – 17:52 UTC, 23 jobs"``."""
    span = incidents["started_at"].dt.strftime("%Y-%m-%d %H:%M") + " – "
    span += incidents["ended_at"].dt.strftime("%Y-%m-%d %H:%M")
    return (
        "incident: "
        + incidents["label"].astype(str)
        + " ("
        + incidents["category"].astype(str)
        + ")<br>"
        + span
        + " UTC, "
        + incidents["jobs"].astype(str)
        + " jobs"
    )


def stability_timeline(
    table: pd.DataFrame, events: pd.DataFrame, bands: pd.DataFrame | None = None
) -> go.Figure:
    """Small multiples: a row per lineage (by name) on one shared time axis, its success rate
    (first attempt) per period with the 95% Wilson band, and dashed the success rate with each
    incident counted once (``success_rate_once``, analytics.once); the events inside the range
    as dotted lines on every row, numbered as event_legend numbers them (the number once, at
    the top); ``bands`` (the report table incident-lineages), the incidents as shaded bands on
    the rows of the lineages they hit."""
    lineages = sorted(table["lineage"].unique())
    rows = max(1, len(lineages))
    height = ROW_HEIGHT * rows + ROW_GAP * (rows - 1) + TIMELINE_MARGIN["t"] + TIMELINE_MARGIN["b"]
    plot_height = height - TIMELINE_MARGIN["t"] - TIMELINE_MARGIN["b"]
    layout = _rows_layout(lineages, rows, ROW_GAP / plot_height if rows > 1 else 0.0)
    palette = qualitative.Plotly
    data = []
    for row, lineage in enumerate(lineages, start=1):
        colour = palette[(row - 1) % len(palette)]
        points = table[(table["lineage"] == lineage) & (table["runs"] > 0)].sort_values("period")
        hover = ["runs", "success_rate_low", "success_rate_high", "success_rate_once", "runs_once"]
        on_row = {"type": "scatter", "xaxis": f"x{_axis(row)}", "yaxis": f"y{_axis(row)}"}
        data += [
            {
                **on_row,
                "x": pd.concat([points["period"], points["period"][::-1]]),
                "y": pd.concat([points["success_rate_high"], points["success_rate_low"][::-1]]),
                "fill": "toself",
                "fillcolor": colour,
                "opacity": 0.15,
                "line": {"width": 0},
                "hoverinfo": "skip",
                "showlegend": False,
                "name": f"{lineage} 95% band",
            },
            {
                **on_row,
                "x": points["period"],
                "y": points["success_rate"],
                "mode": "lines+markers",
                "name": lineage,
                "showlegend": False,
                "cliponaxis": False,
                "line": {"color": colour},
                "customdata": points[hover],
                "hovertemplate": "%{x|%Y-%m-%d}: %{y:.0%} [%{customdata[1]:.0%}, "
                "%{customdata[2]:.0%}] n=%{customdata[0]}; counted once: %{customdata[3]:.0%} "
                "n=%{customdata[4]}<extra>" + lineage + "</extra>",
            },
            {
                **on_row,
                "x": points["period"],
                "y": points["success_rate_once"],
                "mode": "lines",
                "name": f"{lineage} counted once",
                "showlegend": False,
                "cliponaxis": False,
                "line": {"color": colour, "dash": "dash", "width": 1},
                "hoverinfo": "skip",
            },
        ]
    shapes, numbers = _numbered_event_lines(timeline_events(table, events), rows)
    if bands is not None:
        rects, markers = _incident_bands(bands, lineages)
        shapes, data = shapes + rects, data + markers
    layout.update(
        height=height,
        margin=TIMELINE_MARGIN,
        hovermode="closest",
        shapes=shapes,
        annotations=[*layout["annotations"], *numbers],
    )
    return _figure(data, layout)


def _rows_layout(titles: list[str], rows: int, spacing: float) -> dict[str, Any]:
    """The axes and row titles of ``rows`` stacked subplots sharing the bottom row's x axis,
    ``spacing`` (of the plot's height) between them, y from 0 to 100%: what make_subplots(rows,
    shared_xaxes=True, subplot_titles=titles, vertical_spacing=spacing) lays out, in its
    arithmetic (the same domains to the last bit), without its validation."""
    height = (1.0 - spacing * (rows - 1)) / rows
    layout: dict[str, Any] = {"annotations": []}
    for row in range(1, rows + 1):
        below = rows - row
        bottom = sum([height] * below) + below * spacing
        top = min(bottom + height, 1.0)  # make_subplots rounds what float sums put past 1
        shared = {"matches": f"x{_axis(rows)}", "showticklabels": False} if row < rows else {}
        layout[f"xaxis{_axis(row)}"] = {"anchor": f"y{_axis(row)}", "domain": [0.0, 1.0], **shared}
        layout[f"yaxis{_axis(row)}"] = {
            "anchor": f"x{_axis(row)}",
            "domain": [bottom, top],
            "range": [0, 1],
            "tickformat": ".0%",
            "tickvals": [0, 0.5, 1],
        }
    layout["annotations"] = [
        {
            "text": title,
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": layout[f"yaxis{_axis(row)}"]["domain"][1],
            "yanchor": "bottom",
            "yref": "paper",
            "showarrow": False,
            "font": {"size": 12},
        }
        for row, title in enumerate(titles, start=1)
    ]
    return layout


def timeline_events(table: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The legend of stability_timeline(table, events): event_legend over the table's periods."""
    if table.empty:
        return event_legend(events, pd.NaT, pd.NaT)  # NaT bounds hold no event
    return event_legend(events, table["period"].min(), table["period"].max())


def job_day_heatmap(cells: pd.DataFrame) -> go.Figure:
    """TestGrid-style grid: a logical job per row, a day per column, the cell's worst state."""
    states = list(GRID_STATES)
    codes = cells.assign(code=cells["state"].map(states.index))
    days = pd.date_range(cells["day"].min(), cells["day"].max(), freq="D")
    grid = codes.pivot(index="logical_job", columns="day", values="code").reindex(columns=days)
    runs = codes.pivot(index="logical_job", columns="day", values="runs").reindex(columns=days)
    names = np.array([*states, "missing"], dtype=object)  # a cell's state by its code
    text = names[grid.fillna(len(states)).to_numpy(dtype=int)]
    steps = len(states)
    scale = []
    for i, state in enumerate(states):
        scale += [[i / steps, GRID_STATES[state]], [(i + 1) / steps, GRID_STATES[state]]]
    heatmap = {
        "type": "heatmap",
        "z": grid.to_numpy(dtype=float),
        "x": days,
        "y": grid.index,
        "zmin": 0,
        "zmax": steps,
        "colorscale": scale,
        "showscale": False,
        "xgap": 1,
        "ygap": 1,
        "customdata": runs.fillna(0).astype(int).to_numpy(),
        "text": text,
        "hovertemplate": "%{y}<br>%{x|%Y-%m-%d}: %{text} (%{customdata} runs)<extra></extra>",
    }
    layout = {
        "height": max(220, 28 * len(grid) + 80),
        "margin": {"t": 10, "l": 10},
        "plot_bgcolor": "#eeeeee",
        "yaxis": {"automargin": True},
    }
    return _figure([heatmap], layout)


def first_runs_strip(strip: pd.DataFrame) -> go.Figure:
    """The first runs of each new workflow after an event, one coloured square per run."""
    squares = [
        {
            "type": "scatter",
            "x": rows["order"],
            "y": basename(rows["workflow_path"]),
            "mode": "markers",
            "name": outcome,
            "marker": {"symbol": "square", "size": 18, "color": OUTCOME_COLOURS[outcome]},
            "customdata": rows[["created_at", "failure_category"]].astype(str),
            "hovertemplate": "run %{x}: "
            + outcome
            + " %{customdata[1]}<br>%{customdata[0]}<extra></extra>",
        }
        for outcome, rows in strip.groupby("logical_outcome")
    ]
    layout = {
        "xaxis": {"title": {"text": "run after the event"}, "dtick": 1},
        "yaxis": {"automargin": True},
        "height": max(160, 40 * strip["workflow_path"].nunique() + 100),
        "margin": {"t": 10},
    }
    return _figure(squares, layout)


def category_mix(shift: pd.DataFrame) -> go.Figure:
    """Share of each failure category among red runs, before vs after one event."""
    bars = [
        {
            "type": "bar",
            "x": shift["failure_category"],
            "y": shift[f"{side}_share"].fillna(0),
            "name": side,
            "customdata": shift[f"{side}_count"],
            "hovertemplate": "%{x}: %{y:.0%} (%{customdata} runs)<extra>" + side + "</extra>",
        }
        for side in ("before", "after")
    ]
    layout = {
        "barmode": "group",
        "yaxis": {"tickformat": ".0%", "title": {"text": "share of red runs"}},
        "height": 320,
    }
    return _figure(bars, layout)


def categories_over_time(counts: pd.DataFrame, events: pd.DataFrame) -> go.Figure:
    """Failures per day (or week), stacked by category."""
    bars = [
        {
            "type": "bar",
            "x": rows["period"],
            "y": rows["failures"],
            "name": category,
            "marker": {"color": CATEGORY_COLOURS[category]},
        }
        for category in CATEGORIES
        if len(rows := counts[counts["category"] == category])
    ]
    layout: dict[str, Any] = {"barmode": "stack", "yaxis": {"title": {"text": "failures"}}}
    if len(counts):
        lines, labels = _event_lines(events, counts["period"].min(), counts["period"].max())
        layout.update(shapes=lines, annotations=labels)
    layout["height"] = 380
    return _figure(bars, layout)


def rate_bars(table: pd.DataFrame, by: str, rate: str, limit: int = 25) -> go.Figure:
    """A rate per group with its Wilson interval as error bars (top ``limit`` groups)."""
    rows = table.head(limit).iloc[::-1]
    bar = {
        "type": "bar",
        "x": rows[rate],
        "y": rows[by].astype(str),
        "orientation": "h",
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": rows[f"{rate}_high"] - rows[rate],
            "arrayminus": rows[rate] - rows[f"{rate}_low"],
        },
        "customdata": rows["runs"],
        "hovertemplate": "%{y}: %{x:.0%} n=%{customdata}<extra></extra>",
    }
    layout = {
        "xaxis": {"tickformat": ".0%", "title": {"text": rate.replace("_", " ")}},
        "yaxis": {"automargin": True},
        "height": max(200, 26 * len(rows) + 90),
        "margin": {"t": 10},
    }
    return _figure([bar], layout)
