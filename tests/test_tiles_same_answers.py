"""The status tiles' pieces count in numpy over codes (#49): on random runs (a few workflows
and lineages as text or categories, ties in time, pushes, schedules and pull requests on a
few shared commits, every outcome), STALE's gaps, the retirements, the sparklines and the
verdict labels give, to the bit and the dtype, what their pandas versions gave: those
versions, copied below as they were, are the reference (the sparklines' is their definition
of whole days, counted from the runs themselves, where the numpy version reads the counts
per day)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics import staleness
from analytics.config_tables import event_table
from analytics.rates import NOT_ENOUGH_DATA, verdict_label
from analytics.recent import SPARK, SPARK_BUCKETS, day_counts, sparklines
from analytics.silence import RETIRE_DAYS, retirements
from analytics.text import formatted
from store.project import EventConfig
from store.vocabulary import RED_OUTCOMES

START = pd.Timestamp("2026-06-01", tz="UTC")
OUTCOMES = ["pass", "flaky", "fail", "excluded"]


def reference_hour_gaps(ordered: pd.DataFrame, by: str, reference: pd.Timestamp) -> pd.DataFrame:
    """analytics.staleness._hour_gaps as it was (a grouped diff and median)."""
    gaps = ordered.groupby(by)["created_at"].diff().dt.total_seconds() / 3600
    out = (
        ordered.assign(gap=gaps)
        .groupby(by)
        .agg(
            last_run_at=("created_at", "max"),
            usual_gap_hours=("gap", "median"),
            gaps=("gap", "count"),
        )
    )
    out["silent_hours"] = (pd.Timestamp(reference) - out["last_run_at"]).dt.total_seconds() / 3600
    return out


def reference_commit_gaps(ordered: pd.DataFrame, by: str) -> pd.DataFrame:
    """analytics.staleness._commit_gaps as it was (grouped frames of integer pairs)."""
    codes, shas = pd.factorize(ordered["head_sha"], use_na_sentinel=False)
    work = ordered["event"].isin(staleness.WORK_EVENTS).to_numpy()
    order = pd.unique(codes[work])
    position = np.full(len(shas), -1)
    position[order] = np.arange(len(order))
    driven = ordered.loc[work, by].unique()
    at = position[codes]
    chosen = ordered[by].isin(driven).to_numpy() & (at >= 0)
    keys, pos = ordered[by][chosen], at[chosen]
    group = pd.factorize(keys)[0].astype(np.int64)
    _, first = np.unique(group * len(order) + pos, return_index=True)
    ran = pd.DataFrame({by: keys.iloc[first].to_numpy(), "pos": pos[first]})
    out = (
        ran.assign(gap=ran.groupby(by)["pos"].diff())
        .groupby(by)
        .agg(usual_gap_commits=("gap", "median"), gaps=("gap", "count"), last=("pos", "max"))
    )
    out["usual_gap_commits"] = out["usual_gap_commits"].fillna(0.0)
    out["missed_commits"] = len(order) - 1 - out.pop("last")
    return out


def reference_retirements(runs: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """analytics.silence.retirements as it was (a grouped max, a filter per match)."""
    columns = ["workflow_path", "lineage", "retired_at", "event_pr", "successors"]
    migrations = events[events["event_kind"] == "migration"].sort_values("event_date")
    if runs.empty or migrations.empty:
        return pd.DataFrame(columns=columns)
    spans = runs.groupby(["lineage", "workflow_path"], as_index=False)["created_at"].max()
    near = pd.Timedelta(days=RETIRE_DAYS)
    rows = []
    for lineage, path, last in zip(
        spans["lineage"].astype(str),
        spans["workflow_path"].astype(str),
        spans["created_at"],
        strict=True,
    ):
        for date, lineages, pr in zip(
            migrations["event_date"],
            migrations["event_lineages"],
            migrations["event_pr"],
            strict=True,
        ):
            if (lineages is None or lineage in lineages) and date - near <= last < date:
                kin = spans[(spans["lineage"] == lineage) & (spans["workflow_path"] != path)]
                successors = ";".join(sorted(kin.loc[kin["created_at"] >= date, "workflow_path"]))
                rows.append((path, lineage, date, pr, successors))
                break
    return pd.DataFrame(rows, columns=columns)


def reference_sparklines(
    runs: pd.DataFrame, by: str, first: pd.Timestamp, last: pd.Timestamp
) -> pd.Series:
    """analytics.recent.sparklines' definition in pandas, from the runs themselves: each span's
    days listed one by one (span s: from s x days // 24 to the next span's first, at least its
    own first day), every counted run joined to the spans of its day, the grouped mean of red,
    unstacked."""
    counted = runs[runs["logical_outcome"] != "excluded"]
    start = first.floor("D")
    days = (last.floor("D") - start).days + 1
    spans = []
    for span in range(SPARK_BUCKETS):
        low = span * days // SPARK_BUCKETS
        high = max((span + 1) * days // SPARK_BUCKETS, low + 1)
        spans += [(span, day) for day in range(low, high)]
    pairs = pd.DataFrame(spans, columns=["span", "offset"])
    offset = (counted["created_at"].dt.floor("D") - start).dt.days
    keyed = counted.assign(offset=offset, red=counted["logical_outcome"].isin(RED_OUTCOMES))
    joined = keyed.merge(pairs, on="offset")
    red = joined.groupby([by, "span"], observed=True)["red"].mean()
    levels = (red * (len(SPARK) - 1)).round().astype(int).unstack()
    levels = levels.reindex(columns=range(SPARK_BUCKETS))
    blocks = np.array([*SPARK, " "])
    codes = levels.fillna(len(SPARK)).to_numpy(dtype=int)
    return pd.Series(["".join(row) for row in blocks[codes]], index=levels.index, dtype=object)


def reference_verdict_label(table: pd.DataFrame, rate: str = "success_rate") -> pd.Series:
    """analytics.rates.verdict_label as it was (pandas string columns)."""
    text = (
        formatted(table[rate], "{:.2f}")
        + " ["
        + formatted(table[f"{rate}_low"], "{:.2f}")
        + ", "
        + formatted(table[f"{rate}_high"], "{:.2f}")
        + "] n="
        + table["runs"].astype(str)
    )
    short = NOT_ENOUGH_DATA + " (n=" + table["runs"].astype(str) + ")"
    return text.where(table["enough_data"], short)


@st.composite
def histories(draw: st.DrawFn) -> pd.DataFrame:
    """Runs in order of creation (created_at, run_id), as the tiles sort them."""
    size = draw(st.integers(0, 40))
    pick = st.integers(0, 3)
    paths = draw(st.lists(pick, min_size=size, max_size=size))
    hours = draw(st.lists(st.integers(0, 24 * 60), min_size=size, max_size=size))
    runs = pd.DataFrame(
        {
            "run_id": range(size),
            "workflow_path": [f"w{p}.yml" for p in paths],
            "lineage": [f"l{p % 2}" for p in paths],
            "created_at": [START + pd.Timedelta(hours=h) for h in hours],
            "event": draw(
                st.lists(
                    st.sampled_from(["push", "schedule", "pull_request"]),
                    min_size=size,
                    max_size=size,
                )
            ),
            "head_sha": [f"{n:040x}" for n in draw(st.lists(pick, min_size=size, max_size=size))],
            "logical_outcome": draw(
                st.lists(st.sampled_from(OUTCOMES), min_size=size, max_size=size)
            ),
        }
    )
    runs["created_at"] = pd.to_datetime(runs["created_at"], utc=True)
    if draw(st.booleans()):  # as the tiles give them: the text keys as categories
        runs = runs.astype(dict.fromkeys(["workflow_path", "lineage", "event"], "category"))
    return runs.sort_values(["created_at", "run_id"], kind="stable")


@settings(max_examples=15, derandomize=True, deadline=None)
@given(histories(), st.sampled_from(["workflow_path", "lineage"]))
def test_stale_gaps_are_the_pandas_versions(runs, by):
    reference = START + pd.Timedelta(days=70)
    hours = staleness._hour_gaps(runs, by, reference)
    _same(hours, reference_hour_gaps(runs, by, reference))
    commits = staleness._commit_gaps(runs, by)
    _same(commits, reference_commit_gaps(runs, by).astype(commits.dtypes.to_dict()))


def _same(found: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same values and dtypes per name; the index's class (a category's or text, as the
    grouping gave it) is no answer: every caller reindexes it or resets it to a column."""
    assert [str(name) for name in found.index] == [str(name) for name in expected.index]
    pd.testing.assert_frame_equal(
        found.reset_index(drop=True), expected.reset_index(drop=True), check_exact=True
    )


def _migrations(days: list[int]) -> pd.DataFrame:
    return event_table(
        [
            EventConfig(
                (START + pd.Timedelta(days=d)).to_pydatetime(),
                "t",
                7 + d,
                "migration",
                ("l0",) if d % 2 else None,
            )
            for d in days
        ]
    )


@settings(max_examples=25, derandomize=True, deadline=None)
@given(histories(), st.lists(st.integers(5, 60), max_size=3))
def test_retirements_are_the_pandas_versions(runs, days):
    events = _migrations(days)
    pd.testing.assert_frame_equal(
        retirements(runs, events), reference_retirements(runs, events), check_exact=True
    )


@settings(max_examples=25, derandomize=True, deadline=None)
@given(histories(), st.sampled_from(["workflow_path", "lineage"]))
def test_sparklines_are_the_pandas_versions(runs, by):
    if runs.empty:
        return
    first, last = runs["created_at"].min(), runs["created_at"].max()
    found = sparklines(day_counts(runs), by, first, last)
    expected = reference_sparklines(runs, by, first, last)
    assert found.to_dict() == expected.to_dict()


@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 40),
            st.one_of(st.just(np.nan), st.floats(0, 1)),
            st.floats(0, 1),
            st.floats(0, 1),
            st.booleans(),
        ),
        max_size=6,
    )
)
def test_verdict_labels_are_the_pandas_versions(rows):
    table = pd.DataFrame(
        rows,
        columns=["runs", "success_rate", "success_rate_low", "success_rate_high", "enough_data"],
    ).astype({"runs": "int64", "enough_data": bool})
    pd.testing.assert_series_equal(
        verdict_label(table), reference_verdict_label(table), check_names=False
    )


def test_the_medians_are_the_middle_values_of_each_group():
    """group_medians itself, by hand: the reference could agree with a broken copy."""
    code = np.array([0, 0, 0, 1, 1, 1, 1, 2, -1])
    values = np.array([5.0, 1.0, 3.0, 4.0, 2.0, np.nan, 8.0, np.nan, 9.0])
    median, count = staleness.group_medians(code, values, 4)
    np.testing.assert_array_equal(median, [3.0, 4.0, np.nan, np.nan])
    np.testing.assert_array_equal(count, [3, 3, 0, 0])
