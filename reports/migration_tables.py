"""Report tables of change events (the Migrations page's, and the nightly summary's successors
and coverage): stability before and after, each event's answer in one sentence, the category
mix either side and how much of it is known, the first runs of the workflows an event created,
the coverage it lost. The events are those dated within the query's since/until (coverage-lost:
every event); each event's windows are its own, read over every date."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics import coverage, derived, successors
from analytics.before_after import (
    as_exported,
    basis_mix_of,
    before_after_of,
    category_shift_of,
    from_segments,
    headline,
    tally,
    windows_of,
)
from analytics.config_tables import (
    config_lineages,
    invalid_window_table,
    job_renames,
    workflow_table,
)
from analytics.evidence import CONFIG_BASIS
from analytics.frames import logical_run_frame
from analytics.once import run_incidents
from analytics.outcomes import attach_lineage
from reports.query import Query
from reports.table_inputs import events_of, logical_jobs_of
from reports.table_spec import ReportTable
from store.incidents import load_incidents, load_members
from store.migration_counts import segment_tally
from store.project import Project

EVENT_COLUMNS = ["event_date", "event_pr", "event_title", "event_kind"]
SIDE_COLUMNS = ("runs", "pass", "flaky", "fail", "success_rate", "ci_low", "ci_high")
BEFORE_AFTER_COLUMNS = [
    "event_date",
    "event_pr",
    "event_title",
    "lineage",
    "scope",
    "window_days",
    *(f"{side}_{c}" for side in ("before", "after") for c in SIDE_COLUMNS),
    "p_value",
    *(f"{side}_{c}_once" for side in ("before", "after") for c in SIDE_COLUMNS),
    "p_value_once",
    *(f"{side}_{c}" for side in ("before", "after") for c in ("incident_id", "incident_red")),
    "before_known",
    "after_known",
    "before_basis",
    "after_basis",
    # for the Migrations page: the event's kind, the first N runs after it
    "event_kind",
    *(f"first_{c}" for c in SIDE_COLUMNS),
    "first_p_value",
]
ANSWER_COLUMNS = [*EVENT_COLUMNS, "before_runs", "after_runs", "answer"]
SHIFT_COLUMNS = [
    *EVENT_COLUMNS,
    "lineage",
    "failure_category",
    *(f"{side}_{c}" for side in ("before", "after") for c in ("count", "share", "per_run")),
    "shift",
]
BASIS_COLUMNS = [
    *EVENT_COLUMNS,
    *(f"{side}_{c}" for side in ("before", "after") for c in ("red", "known", "basis")),
]
FIRST_RUNS_COLUMNS = ["event_date", *successors.COLUMNS]
COVERAGE_LOST_COLUMNS = list(coverage.LOST_COLUMNS)


def _events(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The change events dated within the query's since/until."""
    events = events_of(engine, project)
    if query.since is not None:
        events = events[events["event_date"] >= query.since]
    if query.until is not None:
        events = events[events["event_date"] < query.until]
    return events.reset_index(drop=True)


def _windows(engine: Engine, project: Project, query: Query) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, tagged) of analytics.before_after.windows_of: the runs of the query's scope
    around each event (every date), counted by one statement when the derived tables are
    current, else from the raw rows' frames: the same counts either way."""
    events, every = _events(engine, project, query), query.where(project, dated=False)
    analysis, lineages = project.analysis, config_lineages(project.workflows)
    if derived.is_current(engine, project.repo, project.job_name_strip):
        window = pd.Timedelta(days=analysis.window_days)
        dates = events["event_date"]
        cuts = sorted({*dates, *(dates - window), *(dates + window)})
        invalid = invalid_window_table(project.invalid_windows).itertuples(index=False)
        segments = segment_tally(
            engine,
            every,
            [cut.to_pydatetime() for cut in cuts],
            analysis.first_runs,
            [(path, start.to_pydatetime(), end.to_pydatetime()) for path, start, end, _ in invalid],
            CONFIG_BASIS,
        )
        counts = from_segments(segments, cuts, events, analysis.window_days)
        workflows = workflow_table(project.workflows)
        paths = attach_lineage(counts[["workflow_path"]].drop_duplicates(), workflows)
        lineage_of = paths.set_index("workflow_path")["lineage"]
    else:
        runs = logical_run_frame(engine, project, every)
        incident = run_incidents(runs, load_members(engine, every))
        counts = tally(runs, events, analysis.window_days, analysis.first_runs, incident)
        lineage_of = runs.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"]
    return windows_of(counts, events, lineage_of, lineages, analysis.first_runs)


def before_after_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    pairs, tagged = _windows(engine, project, query)
    table = before_after_of(pairs, tagged, project.analysis, query.scope)
    renamed = {f"first_success_rate_{bound}": f"first_ci_{bound}" for bound in ("low", "high")}
    table = as_exported(table, basis_mix_of(pairs, tagged, per_lineage=True))
    return table.rename(columns=renamed)[BEFORE_AFTER_COLUMNS]


def answers_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Each event's answer in one sentence (analytics.before_after.headline), from its
    lineages with a run on either side, and the runs it pools either side."""
    table = before_after_table(engine, project, query)
    counted = table[table["before_runs"] + table["after_runs"] > 0]
    incidents = load_incidents(engine, project.repo)
    events = _events(engine, project, query)
    found = [
        counted[(counted["event_date"] == date) & (counted["event_title"] == title)]
        for date, title in zip(events["event_date"], events["event_title"], strict=True)
    ]
    return events.assign(
        before_runs=[int(rows["before_runs"].sum()) for rows in found],
        after_runs=[int(rows["after_runs"].sum()) for rows in found],
        answer=[headline(rows, project.analysis, incidents) for rows in found],
    )[ANSWER_COLUMNS]


def category_shift_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return category_shift_of(*_windows(engine, project, query))[SHIFT_COLUMNS]


def basis_mix_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return basis_mix_of(*_windows(engine, project, query), per_lineage=False)[BASIS_COLUMNS]


def first_runs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """analytics.successors over the query's runs of every date: a workflow's first run in
    a date range is not its first run."""
    runs = logical_run_frame(engine, project, query.where(project, dated=False))
    events = _events(engine, project, query)
    analysis = project.analysis
    strips = successors.successor_first_runs(
        runs, events, analysis.first_runs, analysis.window_days
    )
    dates = events.drop_duplicates("event_title").set_index("event_title")["event_date"]
    # a dict: pandas cannot map through an empty Series of times (no event in the range)
    made = strips["event_title"].map(dates.to_dict())
    return strips.assign(event_date=made)[FIRST_RUNS_COLUMNS]


def coverage_lost_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Logical jobs that ran in the window before an event (of any kind) and have no
    successor after it; jobs read over every date, as the event's window is its own."""
    events = events_of(engine, project)
    diff = coverage.coverage_diff(
        logical_jobs_of(engine, project, query, dated=False),
        events,
        job_renames(project.lineages),
        window_days=project.analysis.window_days,
        kinds=tuple(events["event_kind"].unique()),
    )
    return coverage.lost_jobs(diff)[COVERAGE_LOST_COLUMNS]


TABLES = (
    ReportTable(
        "before-after",
        "a change event and a lineage it touches: stability before and after",
        BEFORE_AFTER_COLUMNS,
        before_after_table,
    ),
    ReportTable(
        "migration-answers",
        "a change event: its before/after answer in one sentence",
        ANSWER_COLUMNS,
        answers_table,
    ),
    ReportTable(
        "category-shift",
        "a change event, a lineage it touches and a failure category: red runs before and after",
        SHIFT_COLUMNS,
        category_shift_table,
        category_column="failure_category",
    ),
    ReportTable(
        "basis-mix",
        "a change event: how much of its red runs' category mix is known, before and after",
        BASIS_COLUMNS,
        basis_mix_table,
    ),
    ReportTable(
        "first-runs",
        "a run among the first runs of a workflow a change event created",
        FIRST_RUNS_COLUMNS,
        first_runs_table,
    ),
    ReportTable(
        "coverage-lost",
        "a job that ran before an event and has no successor after it",
        COVERAGE_LOST_COLUMNS,
        coverage_lost_table,
    ),
)
