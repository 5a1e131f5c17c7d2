"""``ciflake export``: the analytics as CSV files for retrospectives.

Fixed column orders (a spreadsheet or script may rely on them):

- ``runs``: one row per workflow run (its attempts collapsed into a logical outcome)
- ``before-after``: one row per change event and lineage it touches, default-branch scope unless
  asked otherwise; ``before_runs`` = before_pass + before_flaky + before_fail (excluded runs
  count in no rate); rates are fractions in [0, 1] with a 95% Wilson interval; ``p_value`` is a
  two-sided Fisher exact test of pass vs (flaky + fail), empty when a side has no runs.

Files are UTF-8 with a header; times are ISO-8601 UTC (``2026-06-03T07:51:40Z``); a text cell
that begins with ``=``, ``+``, ``-`` or ``@`` is prefixed with ``'`` so no spreadsheet runs it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine

from analytics.before_after import before_after
from analytics.outcomes import attach_lineage, logical_runs, with_run_categories
from analytics.setup import event_table, workflow_table
from ciflake.config import Config, ConfigError, parse_datetime
from ciflake.events import all_events
from store.queries import RunFilter, load_attempts, load_failures, load_runs

RUNS_COLUMNS = [
    "run_id",
    "repo",
    "workflow_path",
    "workflow_name",
    "lineage",
    "tags",
    "event",
    "head_branch",
    "head_sha",
    "created_at",
    "run_attempt",
    "logical_outcome",
    "conclusion",
    "first_attempt_conclusion",
    "failure_category",
    "html_url",
]

BEFORE_AFTER_COLUMNS = [
    "event_date",
    "event_pr",
    "event_title",
    "lineage",
    "scope",
    "window_days",
    *(
        f"{side}_{c}"
        for side in ("before", "after")
        for c in ("runs", "pass", "flaky", "fail", "success_rate", "ci_low", "ci_high")
    ),
    "p_value",
]

TABLES = ("runs", "before-after")
LATER_TABLES = ("jobs", "failures", "signatures", "flaky")
FORMULA_PREFIXES = ("=", "+", "-", "@")


def logical_run_frame(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The logical runs of ``where`` with failure category, lineage and tags."""
    runs = logical_runs(load_runs(engine, where), load_attempts(engine, where))
    runs = with_run_categories(runs, load_failures(engine, where))
    return attach_lineage(runs, workflow_table(config.workflows))


def runs_export(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The ``runs`` table, in RUNS_COLUMNS order."""
    return logical_run_frame(engine, config, where)[RUNS_COLUMNS]


def before_after_export(
    engine: Engine, config: Config, where: RunFilter, scope: str = "default"
) -> pd.DataFrame:
    """The ``before-after`` table for the events dated within ``where``'s since/until; the runs
    are read from W days before the first of them to W days after the last."""
    events = event_table(all_events(config, engine))
    if where.since is not None:
        events = events[events["event_date"] >= where.since]
    if where.until is not None:
        events = events[events["event_date"] < where.until]
    window = pd.Timedelta(days=config.window_days)
    runs_where = RunFilter(
        repo=where.repo,
        since=where.since - window if where.since else None,
        until=where.until + window if where.until else None,
        paths=where.paths,
    )
    table = before_after(
        logical_run_frame(engine, config, runs_where),
        events,
        window_days=config.window_days,
        first_runs=config.first_runs,
        scope=scope,
        default_branch=config.default_branch,
        min_runs=config.min_runs,
    )
    renamed = {
        f"{side}_success_rate_{bound}": f"{side}_ci_{bound}"
        for side in ("before", "after")
        for bound in ("low", "high")
    }
    return table.rename(columns=renamed)[BEFORE_AFTER_COLUMNS]


def for_spreadsheets(frame: pd.DataFrame) -> pd.DataFrame:
    """Times as ISO-8601 UTC text, and text cells that a spreadsheet would run as a formula
    prefixed with ``'``."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            out[column] = values.dt.tz_convert("UTC").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        elif values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            text = values.astype("string")
            risky = text.str.startswith(FORMULA_PREFIXES).fillna(False)
            out[column] = text.where(~risky, "'" + text)
    return out


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` as UTF-8 CSV with a header; one ConfigError line when it cannot."""
    try:
        for_spreadsheets(frame).to_csv(path, index=False, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_table(table: str) -> None:
    """ConfigError for a table that does not exist (yet), before any database work."""
    if table in LATER_TABLES:
        raise ConfigError(f"export table {table!r} is not available yet (now: {', '.join(TABLES)})")
    if table not in TABLES:
        raise ConfigError(f"unknown export table {table!r} (choose from: {', '.join(TABLES)})")


def export_table(
    engine: Engine, config: Config, table: str, where: RunFilter, scope: str = "default"
) -> pd.DataFrame:
    """The frame of ``table`` (one of TABLES)."""
    check_table(table)
    if table == "runs":
        return runs_export(engine, config, where)
    return before_after_export(engine, config, where, scope)


def parse_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """--since/--until as UTC datetimes; a range that ends before it starts is an error."""
    start = parse_datetime(since, "--since") if since else None
    end = parse_datetime(until, "--until") if until else None
    if start and end and end <= start:
        raise ConfigError(f"--until {until!r} is not after --since {since!r}")
    return start, end
