"""Report tables of change events (the Migrations page's, and the nightly summary's successors
and coverage): stability before and after, each event's answer in one sentence, the category
mix either side and how much of it is known, the first runs of the workflows an event created,
the coverage it lost. The events are those dated within the query's since/until (coverage-lost:
every event); each event's windows are its own, read over every date."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from analytics import coverage, successors
from analytics.before_after import (
    as_exported,
    basis_mix_of,
    before_after_of,
    category_shift_of,
    from_segments,
    headlines,
    tally,
    windows_of,
)
from analytics.config_tables import (
    config_lineages,
    invalid_window_table,
    job_renames,
)
from analytics.evidence import CONFIG_BASIS
from analytics.frames import logical_run_frame
from analytics.once import run_incidents
from reports.query import Query
from reports.table_inputs import (
    derived_current,
    events_of,
    logical_jobs_of,
    shared_counts,
    with_lineage,
)
from reports.table_spec import ReportTable
from store.incidents import load_incidents, load_members
from store.migration_counts import job_segments, last_runs, segment_tally
from store.project import Project
from store.runfilter import RunFilter

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


def _dated(events: pd.DataFrame, query: Query) -> pd.DataFrame:
    """The change ``events`` (events_of) dated within the query's since/until, numbered
    (their index) by their place among every event, as the window counts number them."""
    if query.since is not None:
        events = events[events["event_date"] >= query.since]
    if query.until is not None:
        events = events[events["event_date"] < query.until]
    return events


def _cuts(events: pd.DataFrame, window_days: int) -> list[pd.Timestamp]:
    """The times the events' windows start and end at and the events' dates, sorted: the
    segments between them count every window (store.migration_counts)."""
    window, dates = pd.Timedelta(days=window_days), events["event_date"]
    return sorted({*(dates - window), *dates, *(dates + window)})


def _segments(
    engine: Engine, project: Project, where: RunFilter, events: pd.DataFrame
) -> pd.DataFrame:
    """store.migration_counts.segment_tally of ``where`` cut at every event's windows (the
    derived tables current; ``events``: every event, events_of): read once for the window
    tables and first-runs (reports.table_inputs.shared_counts): do not modify."""
    analysis = project.analysis

    def compute(_: bool) -> pd.DataFrame:
        cuts = [cut.to_pydatetime() for cut in _cuts(events, analysis.window_days)]
        invalid = invalid_window_table(project.invalid_windows).itertuples(index=False)
        spans = [
            (path, start.to_pydatetime(), end.to_pydatetime()) for path, start, end, _ in invalid
        ]
        return segment_tally(engine, where, cuts, analysis.first_runs, spans, CONFIG_BASIS)

    return shared_counts(
        f"migration-segments {_configured(project)}", engine, project, where, compute
    )


def _window_counts(
    engine: Engine, project: Project, where: RunFilter, events: pd.DataFrame, current: bool
) -> pd.DataFrame:
    """The window counts (analytics.before_after.TALLY_COLUMNS) of every event (``events``)
    over the runs of ``where``: from the segments' counts when the derived tables are
    ``current``, else from the raw rows' frames, the same counts either way."""
    analysis = project.analysis
    if current:
        segments = _segments(engine, project, where, events)
        cuts = _cuts(events, analysis.window_days)
        return from_segments(segments, cuts, events, analysis.window_days)
    runs = logical_run_frame(engine, project, where)
    incident = run_incidents(runs, load_members(engine, where))
    return tally(runs, events, analysis.window_days, analysis.first_runs, incident)


def _configured(project: Project) -> str:
    """What the Migrations page's shared frames depend on besides the filter and the data:
    the configured events, settings, invalid windows and workflows (their lineages)."""
    return repr((project.events, project.analysis, project.invalid_windows, project.workflows))


def _windows(
    engine: Engine, project: Project, query: Query, events: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, tagged) of analytics.before_after.windows_of for the query's events, over the
    runs of its scope (every date): those of every event (``events``: events_of) computed once
    for the page's window tables (reports.table_inputs.shared_counts), the query's chosen."""
    every = query.where(project, dated=False)

    def compute(current: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        counts = _window_counts(engine, project, every, events, current)
        paths = with_lineage(counts[["workflow_path"]].drop_duplicates(), project)
        lineage_of = paths.set_index("workflow_path")["lineage"]
        lineages = config_lineages(project.workflows)
        return windows_of(counts, events, lineage_of, lineages, project.analysis.first_runs)

    name = f"migration-windows {_configured(project)}"
    pairs, tagged = shared_counts(name, engine, project, every, compute)
    chosen = pairs["event_date"].isin(_dated(events, query)["event_date"])
    if chosen.all():
        return pairs, tagged
    pairs = pairs[chosen].reset_index(drop=True)
    return pairs, tagged[tagged["pair"].isin(pairs["pair"])].reset_index(drop=True)


def before_after_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return _before_after(engine, project, query, events_of(engine, project))


def _before_after(
    engine: Engine, project: Project, query: Query, events: pd.DataFrame
) -> pd.DataFrame:
    """Every event's rows (computed once for before-after and migration-answers: reports.
    table_inputs.shared_counts), those of the events within the query's dates chosen."""
    every = query.where(project, dated=False)

    def compute(current: bool) -> pd.DataFrame:
        pairs, tagged = _windows(engine, project, replace(query, since=None, until=None), events)
        table = before_after_of(pairs, tagged, project.analysis, query.scope)
        renamed = {f"first_success_rate_{end}": f"first_ci_{end}" for end in ("low", "high")}
        table = as_exported(table, basis_mix_of(pairs, tagged, per_lineage=True))
        return table.rename(columns=renamed)[BEFORE_AFTER_COLUMNS]

    name = f"migration-before-after {query.scope} {_configured(project)}"
    table = shared_counts(name, engine, project, every, compute)
    dated = table["event_date"].isin(_dated(events, query)["event_date"])
    # every event's (the page's): the shared rows as they are, not a copy of a wide table
    return table if dated.all() else table[dated].reset_index(drop=True)


def answers_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Each event's answer in one sentence (analytics.before_after.headline), from its
    lineages with a run on either side, and the runs it pools either side."""
    every = events_of(engine, project)
    table = _before_after(engine, project, query, every)
    incidents = load_incidents(engine, project.repo)
    events = _dated(every, query)
    # each event's rows with a run either side, found in the shared table (not a copy of its
    # counted rows) by comparing in numpy (UTC, naive): a pandas comparison per event cost the
    # table 2 ms
    before, after = (table[f"{side}_runs"].to_numpy() for side in ("before", "after"))
    counted = before + after > 0
    titles = table["event_title"].to_numpy(dtype=object)
    dates = table["event_date"].to_numpy(dtype="datetime64[ns]")
    found = [
        np.flatnonzero(counted & (dates == date) & (titles == title))
        for date, title in zip(
            events["event_date"].to_numpy(dtype="datetime64[ns]"),
            events["event_title"],
            strict=True,
        )
    ]
    answers = {
        "before_runs": [int(before[rows].sum()) for rows in found],
        "after_runs": [int(after[rows].sum()) for rows in found],
        "answer": headlines(table, found, project.analysis, incidents),
    }
    chosen = events[EVENT_COLUMNS].reset_index(drop=True)
    return pd.concat([chosen, pd.DataFrame(answers)], axis=1)


def category_shift_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    windows = _windows(engine, project, query, events_of(engine, project))
    return category_shift_of(*windows)[SHIFT_COLUMNS]


def basis_mix_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    windows = _windows(engine, project, query, events_of(engine, project))
    return basis_mix_of(*windows, per_lineage=False)[BASIS_COLUMNS]


def first_runs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """analytics.successors over the query's runs of every date (a workflow's first run in a
    date range is not its first run): when the derived tables are current, one statement
    reads only the first runs of the workflows first run around an event."""
    every, every_event = query.where(project, dated=False), events_of(engine, project)
    events, analysis = _dated(every_event, query), project.analysis
    if derived_current(engine, project):
        spans = successors.born_spans(events, analysis.window_days)
        segments = _segments(engine, project, every, every_event)
        found, born = successors.first_runs_of_new(segments, spans, analysis.first_runs)
        # the dtypes of the logical runs' frame (analytics.frames), whatever rows came back
        runs = found.astype({"logical_outcome": object, "failure_category": "str"})
    else:
        runs, born = logical_run_frame(engine, project, every), None
    strips = successors.successor_first_runs(
        runs, events, analysis.first_runs, analysis.window_days, born
    )
    dates = events.drop_duplicates("event_title").set_index("event_title")["event_date"]
    # a dict: pandas cannot map through an empty Series of times (no event in the range)
    made = strips["event_title"].map(dates.to_dict())
    return strips.assign(event_date=made)[FIRST_RUNS_COLUMNS]


def coverage_lost_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Logical jobs that ran in the window before an event (of any kind) and have no
    successor after it; jobs read over every date, as the event's window is its own: when the
    derived tables are current, counted by one statement per window segment, the last run of
    each lost job then read to link it."""
    events, every = events_of(engine, project), query.where(project, dated=False)
    current = derived_current(engine, project)
    if current:
        cuts = _cuts(events, project.analysis.window_days)
        counted = job_segments(engine, every, [cut.to_pydatetime() for cut in cuts])
        jobs = with_lineage(counted.assign(run_id=np.nan, html_url=None), project)
    else:
        jobs = logical_jobs_of(engine, project, query, dated=False)
    diff = coverage.coverage_diff(
        jobs,
        events,
        job_renames(project.lineages),
        window_days=project.analysis.window_days,
        kinds=tuple(events["event_kind"].unique()),
    )
    lost = coverage.lost_jobs(diff)
    return (_linked(engine, every, lost) if current else lost)[COVERAGE_LOST_COLUMNS]


def _linked(engine: Engine, where: RunFilter, lost: pd.DataFrame) -> pd.DataFrame:
    """``lost`` with each job's last run before its event linked: of the runs of its workflow
    that ran it at its last time, the last by id (analytics.coverage sorts so)."""
    if lost.empty:
        return lost
    keys = ["last_workflow_path", "logical_job", "last_run_at"]
    wanted = lost[keys].drop_duplicates()
    runs = last_runs(
        engine,
        where,
        [(path, name, at.to_pydatetime()) for path, name, at in wanted.itertuples(index=False)],
    )
    # each (workflow, job, time)'s address, the last run by id winning; in a dict, where a
    # sort, a drop_duplicates and a merge of a few rows cost the table 4 ms
    ids = runs["run_id"].to_numpy()
    order = np.argsort(ids, kind="stable")
    address = dict(
        zip(
            zip(
                runs["workflow_path"].to_numpy(dtype=object)[order].tolist(),
                runs["logical_job"].to_numpy(dtype=object)[order].tolist(),
                runs["created_at"].dt.as_unit("ns").array.asi8[order].tolist(),
                strict=True,
            ),
            runs["html_url"].to_numpy(dtype=object)[order].tolist(),
            strict=True,
        )
    )
    urls = [
        address.get(key)
        for key in zip(
            lost["last_workflow_path"].tolist(),
            lost["logical_job"].tolist(),
            lost["last_run_at"].dt.as_unit("ns").array.asi8.tolist(),
            strict=True,
        )
    ]
    return lost.assign(last_run_url=pd.Series(urls, index=lost.index, dtype=runs["html_url"].dtype))


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
