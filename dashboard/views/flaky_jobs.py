"""Flaky jobs: logical jobs ranked by the Wilson lower bound of their flake rate, with the
verdict of every failure and the evidence that decided it."""

import streamlit as st

from dashboard import charts, loaders
from dashboard.context import current_view

view = current_view()

st.title("Flaky jobs")
ranked = loaders.flaky_jobs(view.db_url, view.filters)
st.caption(
    "Flake rate = passed on a rerun / (passed first time + passed on a rerun); ranked by the "
    "lower bound of its 95% Wilson interval, jobs with fewer than the minimum runs last."
)
st.plotly_chart(charts.rate_bars(ranked, "logical_job", "flake_rate"))
st.dataframe(
    ranked[
        [
            "lineage",
            "logical_job",
            "runs",
            "pass",
            "flaky",
            "fail",
            "flake_rate",
            "flake_rate_low",
            "flake_rate_high",
            "success_rate",
            "enough_data",
        ]
    ],
    hide_index=True,
    column_config={
        c: st.column_config.NumberColumn(format="percent")
        for c in ("flake_rate", "flake_rate_low", "flake_rate_high", "success_rate")
    },
)

st.subheader("Verdicts and evidence")
verdicts = loaders.job_verdicts(view.db_url, view.filters)
job = st.selectbox("Logical job", ranked["logical_job"], key="verdict_job")
mine = verdicts[verdicts["logical_job"] == job].sort_values("created_at", ascending=False)
st.dataframe(
    mine["verdict"].value_counts().rename_axis("verdict").reset_index(name="failures"),
    hide_index=True,
)
st.dataframe(
    mine[["created_at", "verdict", "evidence", "category", "runner_name", "html_url"]],
    hide_index=True,
    column_config={"html_url": st.column_config.LinkColumn("run", display_text="open")},
)
