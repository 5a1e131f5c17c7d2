"""Flaky jobs: logical jobs ranked by the Wilson lower bound of their flake rate, with the
verdict of every failure and the evidence that decided it, then per workflow the time to
repair, the retry tax (accelerator-hours spent on reruns) and job duration and queue
percentiles; each a section (dashboard.sections)."""

import streamlit as st

from analytics.rates import short_of_data
from analytics.text import basename
from dashboard import charts, figures, sections, tables
from dashboard.context import current_view
from dashboard.loaders import shared

view = current_view()

st.title("Flaky jobs")
ranked = shared.table(view.db_url, view.filters, "flaky-jobs")
st.caption(
    "Flake rate = passed on a rerun / (passed first time + passed on a rerun); ranked by the "
    "lower bound of its 95% Wilson interval, jobs with fewer than the minimum runs last. "
    "Counted once: each incident's red runs of a job are one red run."
)


def _ranking() -> None:
    """The logical jobs by flake rate: a chart of the flakiest and the table of all."""
    short = short_of_data(ranked, shared.project(view.filters.repo).analysis.min_runs)
    if short is not None:
        st.warning(short)
    if len(ranked):
        st.plotly_chart(figures.drawn(charts.rate_bars, ranked, "logical_job", "flake_rate"))
    tables.show(
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
                "flaky_once",
                "fail_once",
                "flake_rate_once",
                "success_rate_once",
            ]
        ],
        "flaky-jobs",
        missing="No logical job ran in the range and scope: nothing to rank.",
        hide_index=True,
        column_config={
            c: st.column_config.NumberColumn(format="percent")
            for c in ("flake_rate", "flake_rate_low", "flake_rate_high", "success_rate")
        }
        | {
            "flaky_once": st.column_config.NumberColumn("flaky, counted once"),
            "fail_once": st.column_config.NumberColumn("fail, counted once"),
            "flake_rate_once": st.column_config.NumberColumn(
                "flake rate, counted once", format="percent"
            ),
            "success_rate_once": st.column_config.NumberColumn(
                "success rate, counted once", format="percent"
            ),
        },
    )


def _verdicts() -> None:
    """The verdict of every failure of one logical job, and the evidence that decided it."""
    job = st.selectbox(
        "Logical job", ranked["logical_job"], key="verdict_job", persist_state="page"
    )
    # Only the chosen job's verdicts are read: its neighbours are its own runs.
    verdicts = shared.table(view.db_url, view.filters, "verdicts", logical_job=job)
    mine = verdicts.sort_values("created_at", ascending=False)
    tables.show(
        mine["verdict"].value_counts().rename_axis("verdict").reset_index(name="failures"),
        "verdict-counts",
        missing=f"No failure of {job} in the range: no verdict to give."
        if job
        else "No logical job in the range: no verdict to give.",
        hide_index=True,
    )
    tables.show(
        mine[
            [
                "created_at",
                "verdict",
                "verdict_once",
                "evidence",
                "category",
                "runner_name",
                "html_url",
            ]
        ],
        "job-failures",
        missing="No failed run of this job to show.",
        hide_index=True,
        column_config={
            "html_url": st.column_config.LinkColumn("run", display_text="open"),
            "verdict_once": st.column_config.TextColumn("verdict, incidents counted once"),
        },
    )


def _repair() -> None:
    """Per workflow: the time to repair, and on request the retry tax and the percentiles."""
    st.caption(
        "Per workflow in the range. Time to repair: from the first hard red run of a streak to "
        "the next green one on the same branch (median and mean, hours; still red: streaks not "
        "repaired yet). Retry tax: accelerator-hours spent on rerun attempts (minutes x the "
        "runner's GPUs or NPUs). Duration and queue: p50 and p95 of every job, minutes. "
        "Definitions: docs/vocabulary.md."
    )
    with_jobs = st.toggle(
        "Add the retry tax and the duration and queue percentiles (reads every job attempt)",
        key="health_jobs",
        persist_state="page",
    )
    health = shared.table(view.db_url, view.filters, "health" if with_jobs else "repair")
    shown = health.columns.drop(["lineage", "workflow_path", "scope"])  # the columns it has
    tables.show(
        health.assign(workflow=basename(health["workflow_path"]))[["workflow", *shown]],
        "repair-and-cost",
        missing="No run in the range and scope: no streak to repair, no rerun to count.",
        hide_index=True,
        column_config={
            "median_repair_hours": st.column_config.NumberColumn(
                "time to repair, median (h)", format="%.1f"
            ),
            "mttr_hours": st.column_config.NumberColumn("MTTR, mean (h)", format="%.1f"),
            "repaired": st.column_config.NumberColumn("repaired"),
            "open": st.column_config.NumberColumn("still red"),
            "rerun_jobs": st.column_config.NumberColumn("rerun jobs"),
            "accelerator_hours": st.column_config.NumberColumn("retry tax (acc-h)", format="%.1f"),
            "duration_p50_min": st.column_config.NumberColumn("duration p50 (min)", format="%.0f"),
            "duration_p95_min": st.column_config.NumberColumn("duration p95 (min)", format="%.0f"),
            "queue_p50_min": st.column_config.NumberColumn("queue p50 (min)", format="%.0f"),
            "queue_p95_min": st.column_config.NumberColumn("queue p95 (min)", format="%.0f"),
        },
    )


sections.show(
    "flaky_jobs",
    {
        "Ranking": _ranking,
        "Verdicts and evidence": _verdicts,
        "Time to repair and reruns": _repair,
    },
)
