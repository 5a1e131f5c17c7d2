"""Overview: a status tile per lineage and workflow, the stability timeline, the job x day grid."""

import streamlit as st

from dashboard import charts, loaders
from dashboard.context import current_view

view = current_view()
STATUS_COLOURS = {
    "PASSING": "green",
    "FLAKY": "orange",
    "FAILING": "red",
    "STALE": "gray",
    "NO DATA": "gray",
}

st.title("Overview")
tiles = loaders.tiles(view.db_url, view.filters)
if tiles.empty:
    st.warning("No runs match the filters.")
    st.stop()
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
timeline = loaders.timeline(view.db_url, view.filters, freq or "W")
st.plotly_chart(charts.stability_timeline(timeline, loaders.events(view.db_url)))
st.caption(
    "Band: 95% Wilson interval. Dotted lines: change events (hover the label for the title)."
)

st.subheader("Job x day")
workflows = tiles.loc[tiles["level"] == "workflow"].sort_values("last_run", ascending=False)
workflow = st.selectbox("Workflow", workflows["name"], key="grid_workflow")
days = st.slider("Days", 7, 90, 28, key="grid_days")
cells = loaders.heatmap(view.db_url, view.filters, workflow, days)
if cells.empty:
    st.info("No counted runs of this workflow in the range.")
else:
    st.plotly_chart(charts.job_day_heatmap(cells))
    st.caption(
        "Green: passed on the first attempt; light green: passed on a rerun; other colours: "
        "the failure category of a red run; grey: no run that day."
    )
