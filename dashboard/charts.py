"""Plotly figure builders: pure functions of DataFrames, so they are tested without Streamlit.

Every time chart draws the change events as labelled vertical lines (DESIGN.md)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from store.vocabulary import CATEGORIES

OUTCOME_COLOURS = {"pass": "#2e7d32", "flaky": "#9ccc65", "fail": "#c62828", "excluded": "#bdbdbd"}
# Red-to-orange shades, one per failure category, in the vocabulary's order.
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
            "#880e4f",
        ],
        strict=True,
    )
)
GRID_STATES = {"green": "#2e7d32", "retry-green": "#9ccc65", **CATEGORY_COLOURS}


def _event_lines(figure: go.Figure, events: pd.DataFrame, first: object, last: object) -> None:
    """A dotted vertical line and a "#PR" label for each event inside [first, last]."""
    shown = events[(events["event_date"] >= first) & (events["event_date"] <= last)]
    for event in shown.itertuples():
        label = f"#{event.event_pr}" if pd.notna(event.event_pr) else event.event_kind
        figure.add_vline(x=event.event_date, line_dash="dot", line_color="#616161", line_width=1)
        figure.add_annotation(
            x=event.event_date,
            y=1.0,
            yref="paper",
            text=label,
            hovertext=event.event_title,
            showarrow=False,
            textangle=-90,
            xanchor="right",
            yanchor="top",
            font={"size": 10},
        )


def stability_timeline(table: pd.DataFrame, events: pd.DataFrame) -> go.Figure:
    """Success rate per lineage and period with its 95% Wilson band; events as lines."""
    figure = go.Figure()
    palette = qualitative.Plotly
    for i, (lineage, rows) in enumerate(table.groupby("lineage")):
        colour = palette[i % len(palette)]
        rows = rows[rows["runs"] > 0].sort_values("period")
        band_x = pd.concat([rows["period"], rows["period"][::-1]])
        band_y = pd.concat([rows["success_rate_high"], rows["success_rate_low"][::-1]])
        figure.add_trace(
            go.Scatter(
                x=band_x,
                y=band_y,
                fill="toself",
                fillcolor=colour,
                opacity=0.15,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=lineage,
            )
        )
        figure.add_trace(
            go.Scatter(
                x=rows["period"],
                y=rows["success_rate"],
                mode="lines+markers",
                name=lineage,
                legendgroup=lineage,
                line={"color": colour},
                customdata=rows[["runs", "success_rate_low", "success_rate_high"]],
                hovertemplate="%{x|%Y-%m-%d}: %{y:.0%} [%{customdata[1]:.0%}, "
                "%{customdata[2]:.0%}] n=%{customdata[0]}<extra>" + lineage + "</extra>",
            )
        )
    if len(table):
        _event_lines(figure, events, table["period"].min(), table["period"].max())
    figure.update_layout(
        yaxis={"title": "success rate (first attempt)", "tickformat": ".0%", "range": [0, 1.02]},
        legend={"orientation": "h", "y": -0.15},
        margin={"t": 30},
        height=420,
    )
    return figure


def job_day_heatmap(cells: pd.DataFrame) -> go.Figure:
    """TestGrid-style grid: a logical job per row, a day per column, the cell's worst state."""
    states = list(GRID_STATES)
    codes = cells.assign(code=cells["state"].map(states.index))
    days = pd.date_range(cells["day"].min(), cells["day"].max(), freq="D")
    grid = codes.pivot(index="logical_job", columns="day", values="code").reindex(columns=days)
    runs = codes.pivot(index="logical_job", columns="day", values="runs").reindex(columns=days)
    text = grid.map(lambda c: "missing" if pd.isna(c) else states[int(c)])
    steps = len(states)
    scale = []
    for i, state in enumerate(states):
        scale += [[i / steps, GRID_STATES[state]], [(i + 1) / steps, GRID_STATES[state]]]
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(dtype=float),
            x=days,
            y=grid.index,
            zmin=0,
            zmax=steps,
            colorscale=scale,
            showscale=False,
            xgap=1,
            ygap=1,
            customdata=runs.fillna(0).astype(int).to_numpy(),
            text=text.to_numpy(),
            hovertemplate="%{y}<br>%{x|%Y-%m-%d}: %{text} (%{customdata} runs)<extra></extra>",
        )
    )
    figure.update_layout(
        height=max(220, 28 * len(grid) + 80),
        margin={"t": 10, "l": 10},
        plot_bgcolor="#eeeeee",
        yaxis={"automargin": True},
    )
    return figure


def first_runs_strip(strip: pd.DataFrame) -> go.Figure:
    """The first runs of each new workflow after an event, one coloured square per run."""
    figure = go.Figure()
    for outcome, rows in strip.groupby("logical_outcome"):
        figure.add_trace(
            go.Scatter(
                x=rows["order"],
                y=rows["workflow_path"].str.rsplit("/", n=1).str[-1],
                mode="markers",
                name=outcome,
                marker={"symbol": "square", "size": 18, "color": OUTCOME_COLOURS[outcome]},
                customdata=rows[["created_at", "failure_category"]].astype(str),
                hovertemplate="run %{x}: "
                + outcome
                + " %{customdata[1]}<br>%{customdata[0]}<extra></extra>",
            )
        )
    figure.update_layout(
        xaxis={"title": "run after the event", "dtick": 1},
        yaxis={"automargin": True},
        height=max(160, 40 * strip["workflow_path"].nunique() + 100),
        margin={"t": 10},
    )
    return figure


def category_mix(shift: pd.DataFrame) -> go.Figure:
    """Share of each failure category among red runs, before vs after one event."""
    figure = go.Figure()
    for side in ("before", "after"):
        figure.add_trace(
            go.Bar(
                x=shift["failure_category"],
                y=shift[f"{side}_share"].fillna(0),
                name=side,
                customdata=shift[f"{side}_count"],
                hovertemplate="%{x}: %{y:.0%} (%{customdata} runs)<extra>" + side + "</extra>",
            )
        )
    figure.update_layout(
        barmode="group", yaxis={"tickformat": ".0%", "title": "share of red runs"}, height=320
    )
    return figure


def categories_over_time(counts: pd.DataFrame, events: pd.DataFrame) -> go.Figure:
    """Failures per day (or week), stacked by category."""
    figure = go.Figure()
    for category in [c for c in CATEGORIES if c in set(counts["category"])]:
        rows = counts[counts["category"] == category]
        figure.add_trace(
            go.Bar(
                x=rows["period"],
                y=rows["failures"],
                name=category,
                marker_color=CATEGORY_COLOURS[category],
            )
        )
    if len(counts):
        _event_lines(figure, events, counts["period"].min(), counts["period"].max())
    figure.update_layout(barmode="stack", yaxis={"title": "failures"}, height=380)
    return figure


def rate_bars(table: pd.DataFrame, by: str, rate: str, limit: int = 25) -> go.Figure:
    """A rate per group with its Wilson interval as error bars (top ``limit`` groups)."""
    rows = table.head(limit).iloc[::-1]
    figure = go.Figure(
        go.Bar(
            x=rows[rate],
            y=rows[by].astype(str),
            orientation="h",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": rows[f"{rate}_high"] - rows[rate],
                "arrayminus": rows[rate] - rows[f"{rate}_low"],
            },
            customdata=rows["runs"],
            hovertemplate="%{y}: %{x:.0%} n=%{customdata}<extra></extra>",
        )
    )
    figure.update_layout(
        xaxis={"tickformat": ".0%", "title": rate.replace("_", " ")},
        yaxis={"automargin": True},
        height=max(200, 26 * len(rows) + 90),
        margin={"t": 10},
    )
    return figure
