"""Overview: a status tile per lineage and workflow, the stability timeline with the
changepoints found in it, the job x day grid."""

import pandas as pd
import streamlit as st

from dashboard import charts
from dashboard.context import current_view
from dashboard.loaders import migrations, overview, shared
from dashboard.shaping import RECENT_RUNS

view = current_view()
STATUS_COLOURS = {
    "PASSING": "green",
    "FLAKY": "orange",
    "FAILING": "red",
    "STALE": "gray",
    "NO DATA": "gray",
}

st.title("Overview")
tiles = overview.tiles(view.db_url, view.filters)
if tiles.empty:
    st.warning("No runs match the filters.")
    st.stop()
st.caption(
    "STALE: silent for longer than the stale factor times its usual gap between runs, before "
    "the newest stored run (at least 3 gaps first); FAILING: its two latest counted runs "
    f"failed; PASSING: its last {RECENT_RUNS} counted runs passed on the first attempt. "
    "Definitions: docs/vocabulary.md."
)
for level, heading in (("lineage", "Lineages"), ("workflow", "Workflows")):
    st.subheader(heading)
    rows = tiles[tiles["level"] == level]
    columns = st.columns(4)
    for i, tile in enumerate(rows.itertuples()):
        with columns[i % 4].container(border=True):
            colour = STATUS_COLOURS[tile.status]
            st.markdown(f"**:{colour}-badge[{tile.status}]** {tile.name.rsplit('/', 1)[-1]}")
            st.caption(f"success {tile.label} · last run {tile.last_run:%Y-%m-%d}")

st.subheader("Stability timeline")
freq = st.segmented_control(
    "Period", ["D", "W"], default="W", format_func={"D": "daily", "W": "weekly"}.get
)
timeline = overview.timeline(view.db_url, view.filters, freq or "W")
st.plotly_chart(charts.stability_timeline(timeline, shared.events(view.db_url)))
st.caption(
    "Band: 95% Wilson interval. Dotted lines: change events (hover the label for the title)."
)

st.subheader("Changepoints")
st.caption(
    "Dates in the range where a lineage's red rate (flaky or fail) shifted, found without "
    "looking at the events. A step on a day when a workflow of the lineage started or stopped, "
    "or a job joined (+) or left (-) its runs, pays half the penalty of a step on another day: "
    "job sets change red rates, and the data say when they changed. The interval holds every "
    "day where the step fits the data about as well (within 1.92 of log-likelihood): wide, the "
    "data alone do not date it. A shift far from any event is a change nobody announced."
)
found = migrations.changepoints(view.db_url, view.filters)
if found.empty:
    st.caption("No shift in the range that the data can date.")
else:
    st.dataframe(
        pd.DataFrame(
            {
                "lineage": found["lineage"],
                "date": found["date"].dt.date,
                "between": found["date_low"].dt.strftime("%Y-%m-%d")
                + " – "
                + found["date_high"].dt.strftime("%Y-%m-%d"),
                "red rate": found["before_rate"].map("{:.0%}".format)
                + " → "
                + found["after_rate"].map("{:.0%}".format),
                "runs before / after": found["before_runs"].astype(str)
                + " / "
                + found["after_runs"].astype(str),
                "job set that day": found["known_change"],
                "nearest event": found["event_pr"].map(
                    lambda pr: f"#{pr:.0f} " if pd.notna(pr) else ""
                )
                + found["event_title"].fillna("–"),
                "days from it": found["distance_days"].round(1),
            }
        ),
        hide_index=True,
    )

st.subheader("Job x day")
workflows = tiles.loc[tiles["level"] == "workflow"].sort_values("last_run", ascending=False)
workflow = st.selectbox("Workflow", workflows["name"], key="grid_workflow")
days = st.slider("Days", 7, 90, 28, key="grid_days")
cells = overview.heatmap(view.db_url, view.filters, workflow, days)
if cells.empty:
    st.info("No counted runs of this workflow in the range.")
else:
    st.plotly_chart(charts.job_day_heatmap(cells))
    st.caption(
        "Green: passed on the first attempt; light green: passed on a rerun; other colours: "
        "the failure category of a red run; grey: no run that day."
    )
