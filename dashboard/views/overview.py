"""Overview: a status tile per lineage and workflow, the stability timeline, the changepoints
found in it, the job x day grid; each a section (dashboard.sections), the tiles first."""

import pandas as pd
import streamlit as st

from analytics.recent import STATUSES, TREND_P
from analytics.silence import describe_silence
from analytics.text import filled, formatted
from dashboard import charts, figures, sections, tables
from dashboard.context import current_view
from dashboard.filters import period
from dashboard.loaders import shared

view = current_view()
STATUS_COLOURS = {
    "PASSING": "green",
    "FLAKY": "orange",
    "FAILING": "red",
    "SILENT": "red",
    "STALE": "violet",
    "NO DATA": "gray",
    "RETIRED": "blue",
}


def _small(text: str) -> str:
    return f":gray[:small[{text}]]"


def _tile(tile: pd.Series) -> None:
    """One tile: status, name and trend; the window's rate; the sparkline; the last run. One
    Markdown element: the browser lays out each element with its own React tree and styles, and
    five per tile made the tiles most of the Overview's drawing."""
    name = str(tile["name"]).rsplit("/", 1)[-1]
    trend = f" {tile['trend']}" if tile["trend"] else ""
    lines = [f"**:{STATUS_COLOURS[tile['status']]}-badge[{tile['status']}]** {name}{trend}"]
    if tile["status"] == "RETIRED":
        pr = f"#{tile['retired_by']:.0f} " if pd.notna(tile["retired_by"]) else ""
        successors = tile["successors"] or "no successor: its coverage is lost"
        successors = ", ".join(s.rsplit("/", 1)[-1] for s in successors.split(";"))
        lines.append(_small(f"removed by {pr}on {tile['retired_at']:%Y-%m-%d} → {successors}"))
    if tile["status"] == "SILENT":
        lines.append(_small(describe_silence(tile["silent_detail"], tile["silent_since"])))
    previous = (
        f"{tile['previous_rate']:.2f} [{tile['previous_rate_low']:.2f}, "
        f"{tile['previous_rate_high']:.2f}] n={tile['previous_runs']}"
        if tile["previous_runs"]
        else "no runs"
    )
    once = "the same" if tile["label_once"] == tile["label"] else tile["label_once"]
    lines.append(_small(f"last {tile['recent_days']} days: {tile['label']}; counted once: {once}"))
    lines.append(f"`{tile['sparkline']}`")
    if pd.notna(tile["last_run"]):
        lines.append(f"last run [{tile['last_run']:%Y-%m-%d %H:%M}]({tile['last_run_url']})")
    st.markdown(
        "  \n".join(lines),
        help=f"The {tile['recent_days']} days before: {previous}. An arrow is drawn only when "
        f"the change is significant (Fisher exact, p < {TREND_P}); p = {tile['trend_p']:.2g}. "
        "Counted once: each incident's red runs in the window are one red run. "
        "The bars: the red share (flaky or fail) over the range, oldest first.",
    )


st.title("Overview")
tiles = shared.table(view.db_url, view.filters, "status")
if tiles.empty:
    st.warning("No runs match the filters.")
    st.stop()


def _status() -> None:
    """The tiles, the reddest first, lineages then workflows."""
    st.caption(
        "Each tile reads the last days before the newest stored run (`[dashboard] recent_days`). "
        "FAILING: its two latest counted runs failed; PASSING: every counted run of those days "
        "passed on the first attempt; FLAKY otherwise; SILENT: it should have run and did not "
        "(disabled, its file gone from the default branch, or its schedule passed twice with no "
        "run); STALE: silent for longer than the stale factor times its usual gap, counted in the "
        "commits its siblings ran on for push-driven workflows (at least 3 gaps first); RETIRED: "
        "a configured migration "
        "removed it; ↑/↓: the success rate changed significantly against the days before. The "
        "reddest first. Definitions: docs/vocabulary.md."
    )
    order = {status: rank for rank, status in enumerate(STATUSES)}
    for level, heading in (("lineage", "Lineages"), ("workflow", "Workflows")):
        st.subheader(heading)
        rows = tiles[tiles["level"] == level]
        rows = rows.assign(rank=rows["status"].map(order)).sort_values(["rank", "name"])
        columns = st.columns(4)
        for i, (_, tile) in enumerate(rows.iterrows()):
            with columns[i % 4].container(border=True):
                _tile(tile)


def _timeline() -> None:
    """The success rate per lineage and period, with the change events and incidents."""
    freq = period("overview_freq")
    timeline = shared.table(view.db_url, view.filters, "stability", period=freq)
    events = shared.events(view.db_url, view.filters.repo)
    bands = shared.table(view.db_url, view.filters, "incident-lineages")
    hit = bands["id"].nunique()
    st.plotly_chart(figures.drawn(charts.stability_timeline, timeline, events, bands))
    st.caption(
        "A row per lineage, one time axis: the success rate on the first attempt per "
        f"{'day' if freq == 'D' else 'week'} (hover a point for its runs and interval); band: 95% "
        "Wilson interval; dashed: the success rate with each incident's red runs of the row and "
        f"{'day' if freq == 'D' else 'week'} counted once (docs/vocabulary.md). Dotted lines: "
        "change events, numbered at the top as in the table below. "
        f"Red bands, a ▲ at their start: {hit} incident{'s' if hit != 1 else ''} (a burst of "
        "failures with one cause, docs/vocabulary.md) on the rows of the lineages they hit; "
        "hover the ▲ for its cause, the Failures page lists them."
    )
    legend = charts.timeline_events(timeline, events)
    tables.show(
        legend.assign(date=legend["date"].dt.date),
        "events",
        missing="No change event in the range.",
        hide_index=True,
    )


def _changepoints() -> None:
    """The shifts of each lineage's red rate that the data date."""
    st.caption(
        "Dates in the range where a lineage's red rate (flaky or fail) shifted, found without "
        "looking at the events. A step on a day when a workflow of the lineage started or stopped, "
        "or a job joined (+) or left (-) its runs, pays half the penalty of a step on another day: "
        "job sets change red rates, and the data say when they changed. The interval holds every "
        "day where the step fits the data about as well (within 1.92 of log-likelihood): wide, the "
        "data alone do not date it. A shift far from any event is a change nobody announced."
    )
    found = shared.table(view.db_url, view.filters, "changepoints")
    tables.show(
        pd.DataFrame(
            {
                "lineage": found["lineage"],
                "date": found["date"].dt.date,
                "between": found["date_low"].dt.strftime("%Y-%m-%d")
                + " – "
                + found["date_high"].dt.strftime("%Y-%m-%d"),
                "red rate": formatted(found["before_rate"], "{:.0%}")
                + " → "
                + formatted(found["after_rate"], "{:.0%}"),
                "runs before / after": found["before_runs"].astype(str)
                + " / "
                + found["after_runs"].astype(str),
                "job set that day": found["known_change"],
                "nearest event": formatted(found["event_pr"], "#{:.0f} ", missing="")
                + filled(found["event_title"], "–"),
                "days from it": found["distance_days"].round(1),
            }
        ),
        "changepoints",
        missing="No shift in the range that the data can date.",
        hide_index=True,
    )


def _job_days() -> None:
    """One workflow's jobs by day."""
    workflows = tiles.loc[tiles["level"] == "workflow"].sort_values("last_run", ascending=False)
    workflow = st.selectbox(
        "Workflow", workflows["name"], key="grid_workflow", persist_state="page"
    )
    days = st.slider("Days", 7, 90, 28, key="grid_days", persist_state="page")
    # The grid's last day is the workflow's last run in the range: its days before it, only.
    last_run = workflows.loc[workflows["name"] == workflow, "last_run"].iloc[0]
    first_day = last_run.floor("D") - pd.Timedelta(days=days - 1)
    since = max(first_day, pd.Timestamp(view.filters.window()[0])).to_pydatetime()
    cells = shared.table(view.db_url, view.filters, "job-days", paths=(workflow,), since=since)
    if cells.empty:
        st.info("No counted runs of this workflow in the range.")
    else:
        st.plotly_chart(figures.drawn(charts.job_day_heatmap, cells))
        st.caption(
            "Green: passed on the first attempt; light green: passed on a rerun; other colours: "
            "the failure category of a red run; grey: no run that day."
        )


sections.show(
    "overview",
    {
        "Status": _status,
        "Stability timeline": _timeline,
        "Changepoints": _changepoints,
        "Job x day": _job_days,
    },
)
