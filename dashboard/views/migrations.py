"""Migrations: one change event at a time (the newest migration first), first the answer in
one sentence (analytics.before_after.headline), then before/after per lineage with intervals
and p-values, the first runs of the workflows it created, the coverage it lost, and the
failure-category mix either side with how much of it is known: each a section
(dashboard.sections) below the answer."""

from datetime import timedelta

import pandas as pd
import streamlit as st

from analytics.text import formatted
from dashboard import charts, figures, sections, tables
from dashboard.context import current_view
from dashboard.loaders import shared

view = current_view()


def interval(table: pd.DataFrame, side: str, once: str = "") -> pd.Series:
    """A side's success rate, interval and n; ``once`` "_once": with incidents counted once."""
    rate = table[f"{side}_success_rate{once}"]
    text = (
        formatted(rate, "{:.0%}")
        + " ["
        + formatted(table[f"{side}_ci_low{once}"], "{:.0%}")
        + ", "
        + formatted(table[f"{side}_ci_high{once}"], "{:.0%}")
        + "]"
    )
    return text.where(rate.notna(), "–") + " n=" + table[f"{side}_runs{once}"].astype(str)


def _table(name: str) -> pd.DataFrame:
    """The registry table ``name`` around every event: an event's windows are its own, so the
    date range does not apply."""
    return shared.table(view.db_url, view.filters, name, since=None, until=None)


st.title("Migrations")
st.caption(
    "Windows around each event are fixed by the event (the date range does not apply here); "
    "success = passed on the first attempt; p: two-sided Fisher exact test, before vs after; "
    "counted once: each incident's red runs in a window are one red run."
)
table = _table("before-after")
analysis = shared.project(view.filters.repo).analysis
events = table.drop_duplicates("event_date").sort_values("event_date", ascending=False)
if events.empty:
    st.info(
        "No change event: add one to `[[events]]` in ciflake.toml or with `ciflake events add`."
    )
    st.stop()


def _label(event: pd.Series) -> str:
    pr = f"#{event['event_pr']:.0f} " if pd.notna(event["event_pr"]) else ""
    return f"{event['event_date']:%Y-%m-%d} {pr}{event['event_title']} ({event['event_kind']})"


def _no_runs_around(event: pd.Series) -> str:
    """Why an event has no before/after: no counted run either side of it yet, and whether a
    backfill has still to collect those days (a first night collects a window at a time)."""
    date, window = event["event_date"].to_pydatetime(), timedelta(days=analysis.window_days)
    missing = shared.missing(view.db_url, view.filters.repo, date - window, date + window)
    name = f"#{event['event_pr']:.0f}" if pd.notna(event["event_pr"]) else event["event_title"]
    text = (
        f"No runs yet around {name}: no lineage has a counted run in the "
        f"{analysis.window_days} days either side of {date:%Y-%m-%d}"
    )
    return f"{text}; {missing}." if missing else f"{text}."


labels = [_label(event) for _, event in events.iterrows()]
migrations_first = events["event_kind"].eq("migration").to_numpy().nonzero()[0]
chosen = st.selectbox(
    f"Change event ({len(events)}, newest first)",
    labels,
    index=int(migrations_first[0]) if len(migrations_first) else 0,
    key="migration-event",
)
event = events.iloc[labels.index(chosen)]


def _of_event(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` (a table of change events) of the event chosen."""
    same = frame["event_date"] == event["event_date"]
    return frame[same & (frame["event_title"] == event["event_title"])]


rows = _of_event(table)
rows = rows[rows["before_runs"] + rows["after_runs"] > 0]
for answer in _of_event(_table("migration-answers"))["answer"]:
    st.markdown(answer)
for row in _of_event(_table("basis-mix")).head(1).to_dict("records"):
    st.caption(f"Failure causes before: {row['before_basis']}")
    st.caption(f"Failure causes after: {row['after_basis']}")
if rows.empty:  # an event outside the collected dates: nothing more to show
    st.info(_no_runs_around(event), icon=":material/hourglass_top:")
    st.stop()


def _before_after() -> None:
    """Per lineage: the success rate either side, with intervals and p-values."""
    tables.show(
        pd.DataFrame(
            {
                "lineage": rows["lineage"],
                "before": interval(rows, "before"),
                "after": interval(rows, "after"),
                "first runs after": interval(rows, "first"),
                "p (before/after)": rows["p_value"].round(3),
                "p (before/first)": rows["first_p_value"].round(3),
                "before, counted once": interval(rows, "before", "_once"),
                "after, counted once": interval(rows, "after", "_once"),
                "p, counted once": rows["p_value_once"].round(3),
            }
        ),
        "before-after",
        missing="No lineage has a counted run around this event.",
        hide_index=True,
    )


def _first_runs() -> None:
    """The first counted runs of the workflows the event created."""
    strip = _of_event(_table("first-runs"))
    if strip.empty:
        st.info("No workflow first ran from a day before this event to the window after it.")
        return
    st.caption(
        "Workflows first run from a day before the event to the window after it; "
        "their first counted runs in order (docs/vocabulary.md)."
    )
    st.plotly_chart(figures.drawn(charts.first_runs_strip, strip), key="strip")


def _coverage_lost() -> None:
    """The logical jobs of the window before that did not run after it."""
    gone = _of_event(_table("coverage-lost"))
    tables.show(
        gone.drop(columns=["event_date", "event_pr", "event_title"]),
        "coverage-lost",
        missing=(
            "Every logical job of the window before ran again after it."
            if rows["before_runs"].sum() > 0
            else f"Nothing to compare: no run in the {analysis.window_days} days before it yet."
        ),
        hide_index=True,
        column_config={
            "logical_job": "lost job",
            "last_workflow_path": "workflow",
            "before_runs": st.column_config.NumberColumn(
                f"runs in the {analysis.window_days} days before"
            ),
            "last_run_at": st.column_config.DatetimeColumn("last run at"),
            "last_run_url": st.column_config.LinkColumn("last run", display_text=r"/runs/(\d+)"),
        },
    )


def _failure_causes() -> None:
    """A lineage's failure categories either side, with how much of them is known."""
    mix = _of_event(_table("category-shift"))
    if mix.empty:
        st.info("No failure either side of this event: no category to compare.")
        return
    lineage = st.selectbox(
        "Failure-category mix of lineage",
        sorted(mix["lineage"].unique()),
        key="mix",
        persist_state="page",
    )
    lineage_mix = mix[mix["lineage"] == lineage]
    st.plotly_chart(figures.drawn(charts.category_mix, lineage_mix), key="mix-chart")
    for row in rows[rows["lineage"] == lineage].head(1).to_dict("records"):
        st.caption(
            f"How much of this mix is known: before, {row['before_basis']}; "
            f"after, {row['after_basis']}"
        )


sections.show(
    "migrations",
    {
        "Before and after": _before_after,
        "First runs": _first_runs,
        "Coverage lost": _coverage_lost,
        "Failure causes": _failure_causes,
    },
)
