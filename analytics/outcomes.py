"""Logical runs and logical jobs: attempts collapsed into pass / flaky / fail / excluded.

DESIGN.md: ``pass`` = attempt 1 green; ``flaky`` = an earlier attempt red, the latest green;
``fail`` = the latest attempt red; ``excluded`` = cancelled, skipped, neutral, action_required
or still running. A green latest attempt after only cancelled earlier ones is a ``pass``:
nothing failed. Everything here is vectorised (groupby, merge), never a loop over rows.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from analytics.config_tables import WORKFLOW_COLUMNS
from analytics.evidence import CONFIG_BASIS, failure_basis
from store.vocabulary import CATEGORIES, GREEN_CONCLUSIONS, RED_CONCLUSIONS, RED_OUTCOMES

GREEN, RED = GREEN_CONCLUSIONS, RED_CONCLUSIONS
# logical_jobs' own columns, in the order it gives them (after its runs' columns)
LOGICAL_JOB_COLUMNS = (
    "logical_job",
    "last_attempt",
    "runner_name",
    "labels",
    "started_at",
    "completed_at",
    "conclusion",
    "attempts",
    "first_conclusion",
    "red_attempts",
    "red_attempt",
    "red_job_id",
    "logical_outcome",
)

# Failure categories by priority when one attempt failed for several reasons: the vocabulary's
# order, which puts the specific causes before ``test_failure`` and ``unknown``.
_CATEGORY_RANK = {category: rank for rank, category in enumerate(CATEGORIES)}


def outcome_of(latest: pd.Series, red_before_latest: pd.Series) -> pd.Series:
    """The logical outcome from the latest attempt's conclusion and whether an earlier attempt
    was red (both aligned Series)."""
    outcome = np.select(
        [latest.isin(RED), latest.isin(GREEN) & red_before_latest, latest.isin(GREEN)],
        ["fail", "flaky", "pass"],
        default="excluded",
    )
    return pd.Series(outcome, index=latest.index, dtype="object")


def logical_runs(runs: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (store.frame_queries.load_runs) with ``first_attempt_conclusion``, ``red_attempts``
    and ``logical_outcome`` added. ``attempts`` (run_id, attempt, conclusion) may lack some runs:
    a run with no stored earlier attempt is judged by its own conclusion alone."""
    earlier = attempts.merge(runs[["run_id", "run_attempt"]], on="run_id")
    earlier = earlier[earlier["attempt"] < earlier["run_attempt"]]
    red = earlier[earlier["conclusion"].isin(RED)].groupby("run_id").size().rename("red_attempts")
    first = attempts[attempts["attempt"] == 1].set_index("run_id")["conclusion"]
    out = runs.copy()
    out["red_attempts"] = out["run_id"].map(red).fillna(0).astype(int)
    out["first_attempt_conclusion"] = out["conclusion"].where(
        out["run_attempt"] == 1, out["run_id"].map(first)
    )
    out["logical_outcome"] = outcome_of(out["conclusion"], out["red_attempts"] > 0)
    return out


def normalise_job_names(names: pd.Series, strip: str) -> pd.Series:
    """Logical job names: the config's ``job_name_strip`` regex removed (matrix values, shard
    suffixes), computed once per distinct name."""
    if not strip:
        return names
    pattern = re.compile(strip)
    unique = pd.Series(names.unique())
    mapping = dict(zip(unique, unique.map(lambda n: pattern.sub("", n).strip()), strict=True))
    return names.map(mapping)


def _codes(values: pd.Series) -> tuple[Any, np.ndarray]:
    """(sorted distinct values, float code per row; NaN where missing, so that ``first``
    skips it as it skips a missing value). Unhashable values (labels parsed into lists) are
    told apart by their repr and keep no order."""
    try:
        codes, uniques = pd.factorize(values, sort=True)
        distinct: Any = uniques.array
    except TypeError:
        codes, _ = pd.factorize(values.map(repr).where(values.notna()))
        firsts = pd.Series(np.arange(len(codes))).groupby(codes).first()
        distinct = values.to_numpy(dtype=object)[firsts[firsts.index >= 0].to_numpy()]
    return distinct, np.where(codes < 0, np.nan, codes)


def _decode(distinct: Any, codes: pd.Series) -> pd.Series:
    """The values of ``codes`` (from ``_codes``), missing where the code is NaN."""
    positions = codes.fillna(-1).to_numpy(dtype=np.int64)
    taken = pd.api.extensions.take(distinct, positions, allow_fill=True)
    return pd.Series(taken, index=codes.index)


def _attempt_conclusion(red: pd.Series, green: pd.Series) -> np.ndarray:
    return np.select([red, green], ["failure", "success"], default="other")


def _one_row_each(frame: pd.DataFrame) -> pd.DataFrame:
    """``_collapsed`` for pairs with a single job row: that row is every attempt there is."""
    conclusion = _attempt_conclusion(frame["red"], frame["green"])
    return pd.DataFrame(
        {
            "last_attempt": frame["run_attempt"],
            "runner_name": frame["runner_name"],
            "labels": frame["labels"],
            "started_at": frame["started_at"],
            "completed_at": frame["completed_at"],
            "conclusion": conclusion,
            "attempts": 1,
            "first_conclusion": conclusion,
            "red_attempts": 0,
            "red_attempt": frame["run_attempt"].where(frame["red"]).astype(float),
            "red_job_id": frame["job_id"].where(frame["red"]).astype(float),
        }
    ).set_axis(pd.MultiIndex.from_frame(frame[["run_id", "logical_job"]]))


def _collapsed(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (run_id, logical_job): the latest attempt's last_attempt, runner_name, labels,
    started_at, completed_at and conclusion, with attempts, first_conclusion, red_attempts,
    red_attempt and red_job_id. ``frame``: one row per job, as logical_jobs builds it."""
    # Red shards first, so the first row of an attempt carries the red job's id and runner.
    frame = frame.sort_values(["run_id", "logical_job", "run_attempt", "red"], ascending=False)
    per_attempt = frame.groupby(["run_id", "logical_job", "run_attempt"], sort=False).agg(
        red=("red", "any"),
        green=("green", "all"),
        job_id=("job_id", "first"),
        runner_name=("runner_name", "first"),
        labels=("labels", "first"),
        started_at=("started_at", "min"),
        completed_at=("completed_at", "max"),
    )
    per_attempt["conclusion"] = _attempt_conclusion(per_attempt["red"], per_attempt["green"])
    per_attempt = per_attempt.reset_index().sort_values(["run_id", "logical_job", "run_attempt"])
    keys = ["run_id", "logical_job"]
    grouped = per_attempt.groupby(keys, sort=False)
    latest = grouped.tail(1).set_index(keys)
    summary = pd.DataFrame(
        {
            "attempts": grouped.size(),
            "first_conclusion": grouped["conclusion"].first(),
            "red_attempts": grouped["red"].sum() - latest["red"].astype(int),
        }
    )
    reds = per_attempt[per_attempt["red"]].groupby(keys, sort=False).tail(1).set_index(keys)
    summary["red_attempt"] = reds["run_attempt"]
    summary["red_job_id"] = reds["job_id"]
    latest = latest.rename(columns={"run_attempt": "last_attempt"})
    return latest.drop(columns=["red", "green", "job_id"]).join(summary)


def logical_jobs(jobs: pd.DataFrame, runs: pd.DataFrame, strip: str) -> pd.DataFrame:
    """One row per (run, logical job) across the run's attempts and shards.

    ``jobs``: store.frame_queries.load_jobs. ``runs``: runs with at least run_id, workflow_path,
    event, head_branch, head_sha, created_at; their other columns (lineage, tags...) are
    carried along, except those the job's own values replace (conclusion, logical_outcome...).
    In one attempt a logical job is red if any shard is red, green if every shard is green.

    Columns: the run columns, logical_job, attempts, last_attempt, first_conclusion,
    conclusion, logical_outcome, runner_name, labels, started_at, completed_at (of the latest
    attempt), red_attempts (red attempts before the latest), red_attempt and red_job_id (the
    last red attempt and its red shard, for joining failures; NaN when never red)."""
    # Strings travel as integer codes (sorted, so code order is name order) and are decoded
    # once at the end: sorting and grouping a million rows of strings costs seconds.
    names, name_codes = _codes(normalise_job_names(jobs["name"], strip))
    runners, runner_codes = _codes(jobs["runner_name"])
    labels, label_codes = _codes(jobs["labels"])
    frame = pd.DataFrame(
        {
            "run_id": jobs["run_id"].to_numpy(),
            "logical_job": name_codes,
            "run_attempt": jobs["run_attempt"].to_numpy(),
            "red": jobs["conclusion"].isin(RED).to_numpy(),
            "green": jobs["conclusion"].isin(GREEN).to_numpy(),
            "job_id": jobs["job_id"].to_numpy(),
            "runner_name": runner_codes,
            "labels": label_codes,
            "started_at": jobs["started_at"].reset_index(drop=True),
            "completed_at": jobs["completed_at"].reset_index(drop=True),
        }
    )
    # Most (run, logical job) pairs are one job of one attempt: they need no grouping.
    several = frame.duplicated(["run_id", "logical_job"], keep=False).to_numpy()
    latest = pd.concat([_one_row_each(frame[~several]), _collapsed(frame[several])])
    latest["logical_outcome"] = outcome_of(latest["conclusion"], latest["red_attempts"] > 0)
    latest = latest.reset_index()
    latest["logical_job"] = _decode(names, latest["logical_job"])
    latest["runner_name"] = _decode(runners, latest["runner_name"])
    latest["labels"] = _decode(labels, latest["labels"])
    context = runs.drop(columns=[c for c in latest.columns if c != "run_id" and c in runs])
    return context.merge(latest, on="run_id", how="inner")


STEM = re.compile(r"([^/]+?)(?:\.ya?ml)?$")  # a workflow file's name without .yml/.yaml


def attach_lineage(frame: pd.DataFrame, workflows: pd.DataFrame) -> pd.DataFrame:
    """``lineage``, ``tags`` and ``accelerator`` from ``workflows`` (analytics.config_tables
    .workflow_table); a workflow not listed there is its own lineage, named after its file.
    Looked up once per distinct workflow and spread by code: a merge cost each table a few ms."""
    out = frame.drop(columns=["lineage", "tags", "accelerator"], errors="ignore")
    out = out.reset_index(drop=True)
    codes, paths = pd.factorize(out["workflow_path"])
    # from the columns' lists: itertuples cost ten times as much (0.8 ms a table)
    columns = (workflows[column].tolist() for column in WORKFLOW_COLUMNS)
    listed = {row[0]: row[1:] for row in zip(*columns, strict=True)}
    found = [_listed(path, *listed.get(path, (None, None, None))) for path in paths]
    for i, column in enumerate(("lineage", "tags", "accelerator")):
        values = np.array([*(row[i] for row in found), np.nan if i == 0 else ""], dtype=object)
        out[column] = pd.Series(values[codes], dtype="str")  # code -1 (no path): the last
    return out


def _listed(path: str, lineage: Any, tags: Any, accelerator: Any) -> tuple[Any, str, str]:
    """attach_lineage's three cells of one workflow: its file's stem for a lineage not given,
    empty text for tags and accelerator not given."""
    if pd.isna(lineage):
        match = STEM.search(path)
        lineage = match.group(1) if match else None
    return lineage, *("" if pd.isna(text) else str(text) for text in (tags, accelerator))


def _run_failures(failures: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The failure that speaks for each red logical run, indexed by run_id: that of its last
    classified attempt (the latest for ``fail``, the last red one for ``flaky``), and of its
    highest-priority category when several jobs failed for different reasons."""
    red = runs.loc[runs["logical_outcome"].isin(RED_OUTCOMES), ["run_id", "run_attempt"]]
    matched = failures.merge(red, on="run_id", suffixes=("", "_latest"))
    matched = matched[matched["run_attempt"] <= matched["run_attempt_latest"]]
    matched = matched.assign(
        rank=matched["category"].map(_CATEGORY_RANK).fillna(len(_CATEGORY_RANK)),
        newest=-matched["run_attempt"],
    )
    return matched.sort_values(["newest", "rank"]).drop_duplicates("run_id").set_index("run_id")


def with_run_categories(runs: pd.DataFrame, failures: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (logical) with ``failure_category`` and, where ``failures`` carry evidence and
    log status, ``failure_basis`` (analytics.evidence): both empty for runs that did not go
    red, or that went red with no classified failure."""
    chosen = _run_failures(failures, runs)
    out = runs.assign(failure_category=runs["run_id"].map(chosen["category"]))
    if {"evidence", "log_status"} <= set(failures.columns):
        out["failure_basis"] = runs["run_id"].map(failure_basis(chosen))
    return out


def mark_invalid_windows(
    runs: pd.DataFrame, windows: pd.DataFrame, category: str = "failure_category"
) -> pd.DataFrame:
    """``runs`` (logical runs, or logical jobs with ``category="category"``) with the red ones
    (fail, flaky) created while their workflow file was known to be invalid (``windows``:
    analytics.config_tables.invalid_window_table) in category ``ci_config`` on the basis
    ``config``: the CI definition failed, never the code (DESIGN). A row the collector already
    found ``ci_config`` (no jobs, startup_failure) keeps its own basis."""
    if windows.empty or runs.empty:
        return runs
    # Only the red rows of a listed workflow can be marked: the windows are tested on those.
    # On numpy arrays of the candidates: pandas comparisons of whole columns, one per window,
    # cost more than the rest of the frame's assembly.
    candidate = (
        np.isin(runs["logical_outcome"].to_numpy(), RED_OUTCOMES)
        & runs["workflow_path"].isin(set(windows["workflow_path"])).to_numpy()
    )
    rows = np.flatnonzero(candidate)
    rows = rows[runs[category].iloc[rows].ne("ci_config").to_numpy()]  # decided already: kept
    paths = runs["workflow_path"].iloc[rows].to_numpy(dtype=object)
    created = runs["created_at"].iloc[rows].to_numpy(dtype="datetime64[ns]")
    inside = np.zeros(len(rows), dtype=bool)
    spans = zip(
        windows["workflow_path"],
        windows["invalid_from"].to_numpy(dtype="datetime64[ns]"),
        windows["invalid_to"].to_numpy(dtype="datetime64[ns]"),
        strict=True,
    )
    for path, start, end in spans:
        inside |= (paths == str(path)) & (created >= start) & (created < end)
    marked = np.zeros(len(runs), dtype=bool)
    marked[rows[inside]] = True
    if not marked.any():
        return runs
    # New columns, not a copy of the frame: the other columns stay shared (copy on write).
    out = runs.assign(**{category: runs[category].mask(marked, "ci_config")})
    if "failure_basis" in out:
        out["failure_basis"] = out["failure_basis"].mask(marked, CONFIG_BASIS)
    return out


SCOPES = ("default", "pr", "all")
DEFAULT_BRANCH_EVENTS = frozenset({"push", "schedule", "workflow_dispatch"})
PR_EVENTS = frozenset({"pull_request", "pull_request_target"})


def scope_terms(scope: str, default_branch: str) -> tuple[tuple[str, ...], str | None]:
    """The scope as (events, head branch) for a SQL filter (store.runfilter.RunFilter): the same
    runs as ``in_scope``; empty events and None: no condition."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} not in {', '.join(SCOPES)}")
    if scope == "default":
        return tuple(sorted(DEFAULT_BRANCH_EVENTS)), default_branch
    return (tuple(sorted(PR_EVENTS)), None) if scope == "pr" else ((), None)


def in_scope(runs: pd.DataFrame, scope: str, default_branch: str) -> pd.Series:
    """DESIGN.md scope: ``default`` = push/schedule/workflow_dispatch runs on the default
    branch; ``pr`` = pull-request runs; ``all`` = both (and anything else)."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} not in {', '.join(SCOPES)}")
    if scope == "all":
        return pd.Series(True, index=runs.index)
    if scope == "pr":
        return runs["event"].isin(PR_EVENTS)
    return runs["event"].isin(DEFAULT_BRANCH_EVENTS) & (runs["head_branch"] == default_branch)
