"""The Migrations page's window counts in numpy (#49): on random segment counts (missing keys,
first runs, events on one day, events naming no lineage, one lineage twice, or every lineage),
from_segments, windows_of, category_shift_of and basis_mix_of give, to the bit and the dtype,
what their pandas versions gave: those versions, copied below as they were, are the reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.before_after import (
    TALLY_COLUMNS,
    as_tally,
    basis_columns,
    basis_mix_of,
    category_shift_of,
    from_segments,
    windows_of,
)
from analytics.config_tables import event_table
from analytics.evidence import NO_LOG
from store.migration_counts import SEGMENT_COLUMNS
from store.vocabulary import RED_OUTCOMES


def reference_event_pairs(events: pd.DataFrame, lineages: Sequence[str]) -> pd.DataFrame:
    """analytics.before_after.event_pairs as it was (explode)."""
    touched = events.assign(
        # a column of lists, which pandas-stubs' assign (scalars or arrays) cannot spell
        lineage=[list(ls) if ls is not None else list(lineages) for ls in events["event_lineages"]]  # type: ignore[misc]
    ).explode("lineage")
    touched = touched.dropna(subset=["lineage"]).drop(columns="event_lineages")
    return touched.reset_index(drop=True).rename_axis("pair").reset_index()


def reference_from_segments(
    segments: pd.DataFrame, cuts: Sequence[pd.Timestamp], events: pd.DataFrame, window_days: int
) -> pd.DataFrame:
    """analytics.before_after.from_segments as it was (a merge, two groupbys)."""
    position = {cut: index for index, cut in enumerate(cuts)}
    window = pd.Timedelta(days=window_days)
    spans = [
        (event, side, segment)
        for event, date in events["event_date"].items()
        for side, start, end in (("before", date - window, date), ("after", date, date + window))
        for segment in range(position[start] + 1, position[end] + 1)
    ]
    later = [
        (event, segment)
        for event, date in events["event_date"].items()
        for segment in range(position[date] + 1, len(cuts) + 1)
    ]
    keys = TALLY_COLUMNS[2:7]
    counted = segments[segments["segment"] < len(cuts)]
    per_segment = counted.groupby(["segment", *keys], dropna=False)["n"].sum().reset_index()
    windows = pd.DataFrame(spans, columns=["event", "side", "segment"], dtype=object)
    inside = windows.astype({"event": "int64", "segment": "int64"}).merge(per_segment, on="segment")
    found = inside.groupby(["event", "side", *keys], dropna=False)["n"].sum().reset_index()
    firsts = segments[segments["run_id"].notna()]
    after = pd.DataFrame(later, columns=["event", "segment"], dtype="int64").merge(
        firsts, on="segment"
    )
    first = after.drop(columns="segment").assign(side="first")
    return as_tally(pd.concat([found, first], ignore_index=True))


def reference_windows_of(
    counts: pd.DataFrame,
    events: pd.DataFrame,
    lineage_of: pd.Series,
    lineages: Sequence[str],
    first_runs: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """analytics.before_after.windows_of as it was (map, groupby head, merge)."""
    pairs = reference_event_pairs(events.rename_axis("event").reset_index(), lineages)
    frame = counts.assign(lineage=counts["workflow_path"].map(lineage_of))
    first = (frame["side"] == "first").to_numpy()
    firsts = frame[first].sort_values(["created_at", "run_id"], kind="stable")
    firsts = firsts.groupby(["event", "lineage"]).head(first_runs)
    frame = pd.concat([frame[~first], firsts], ignore_index=True)
    tagged = frame.merge(pairs[["pair", "event", "lineage"]], on=["event", "lineage"])
    return pairs.drop(columns="event"), tagged


def reference_category_shift_of(pairs: pd.DataFrame, tagged: pd.DataFrame) -> pd.DataFrame:
    """analytics.before_after.category_shift_of as it was (groupbys, unstacks, merge)."""
    sides = tagged["side"].isin(["before", "after"]) & (tagged["logical_outcome"] != "excluded")
    tagged = tagged[sides]
    red_rows = tagged["logical_outcome"].isin(RED_OUTCOMES)
    tagged = tagged.assign(red=red_rows, red_n=tagged["n"].where(red_rows, 0))
    totals = tagged.groupby(["pair", "side"]).agg(runs=("n", "sum"), red=("red_n", "sum"))
    # a MultiIndex frame unstacks to a frame (pandas-stubs: frame or series)
    totals = cast(pd.DataFrame, totals.unstack("side")).reindex(
        columns=pd.MultiIndex.from_product([["runs", "red"], ["before", "after"]])
    )
    red = tagged[tagged["red"]].fillna({"failure_category": "unknown"})
    counts = red.groupby(["pair", "failure_category", "side"])["n"].sum().unstack("side")
    counts = counts.reindex(columns=["before", "after"]).fillna(0).astype(int).reset_index()
    out = pairs.merge(counts, on="pair")
    for side in ("before", "after"):
        red_n = out["pair"].map(totals[("red", side)])
        runs_n = out["pair"].map(totals[("runs", side)])
        out[f"{side}_share"] = out[side] / red_n.where(red_n > 0)
        out[f"{side}_per_run"] = out[side] / runs_n.where(runs_n > 0)
    out = out.rename(columns={"before": "before_count", "after": "after_count"})
    out["shift"] = out["after_share"].fillna(0) - out["before_share"].fillna(0)
    return out.drop(columns=["pair", "event_lineages"], errors="ignore")


def reference_basis_mix_of(
    pairs: pd.DataFrame, tagged: pd.DataFrame, per_lineage: bool
) -> pd.DataFrame:
    """analytics.before_after.basis_mix_of as it was (a groupby and a map)."""
    by_event = pairs.groupby(["event_date", "event_title"], sort=False).ngroup()
    pairs = pairs.assign(group=pairs["pair"] if per_lineage else by_event)
    red = tagged[tagged["logical_outcome"].isin(RED_OUTCOMES) & (tagged["side"] != "first")]
    red = pd.DataFrame(
        {
            "group": red["pair"].map(pairs.set_index("pair")["group"]).to_numpy(),
            "side": red["side"].to_numpy(),
            "basis": red["failure_basis"].fillna(NO_LOG).to_numpy(),
            "n": red["n"].to_numpy(),
        }
    )
    counts = red.groupby(["side", "group", "basis"])["n"].sum()
    mixes: dict[tuple[str, int], dict[str, int]] = {}
    levels = (counts.index.get_level_values(level) for level in range(3))
    for side, group, basis, n in zip(*levels, counts.to_numpy(), strict=True):
        mixes.setdefault((side, group), {})[basis] = int(n)
    return basis_columns(pairs, mixes, per_lineage)


class _Event:
    def __init__(self, day: int, lineages: tuple[str, ...] | None) -> None:
        self.date = pd.Timestamp("2026-08-01", tz="UTC") + pd.Timedelta(days=day)
        self.pr, self.title, self.kind, self.lineages = 7000 + day, f"e{day}", "migration", lineages


PATHS = ["a.yml", "b.yml", "c.yml", "d.yml"]  # lineages A, A, B and none
LINEAGE_OF = pd.Series({"a.yml": "A", "b.yml": "A", "c.yml": "B"})


@st.composite
def cases(draw: st.DrawFn) -> tuple[pd.DataFrame, list[pd.Timestamp], pd.DataFrame, int, int]:
    """(segments, cuts, events, window_days, first_runs) as segment_tally and events_of give
    them, and odder: any group in any segment, first runs anywhere, events on one day."""
    window_days, first_runs = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    named = st.sampled_from([None, (), ("A",), ("B", "A"), ("A", "A"), ("Z",)])
    chosen = draw(st.lists(st.tuples(st.integers(0, 6), named), min_size=1, max_size=3))
    events = event_table([_Event(day, lineages) for day, lineages in chosen])
    window = pd.Timedelta(days=window_days)
    dates = events["event_date"]
    cuts = sorted({*(dates - window), *dates, *(dates + window)})
    size = draw(st.integers(0, 25))

    def column(values: list[object]) -> list[object]:
        return draw(st.lists(st.sampled_from(values), min_size=size, max_size=size))

    first = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    hours = column(list(range(0, 24 * 12, 5)))
    start = pd.Timestamp("2026-07-28", tz="UTC")
    segments = pd.DataFrame(
        {
            "segment": pd.Series(column(list(range(len(cuts) + 1))), dtype="int64"),
            "workflow_path": pd.Series(column(PATHS), dtype="str"),
            "logical_outcome": pd.Series(
                column(["pass", "flaky", "fail", "excluded"]), dtype="str"
            ),
            "failure_category": pd.Series(column([None, "oom", "infra"]), dtype="str"),
            "failure_basis": pd.Series(column([None, "log", "job"]), dtype="str"),
            "incident_id": pd.Series(column([None, "i1", "i2"]), dtype=object),
            "created_at": pd.Series(
                [
                    start + pd.Timedelta(hours=h) if f else pd.NaT
                    for h, f in zip(hours, first, strict=True)
                ],
                dtype="datetime64[us, UTC]",
            ),
            "run_id": pd.Series([float(at) if f else np.nan for at, f in enumerate(first)]),
            "html_url": pd.Series(
                [f"u{at}" if f else None for at, f in enumerate(first)], dtype="str"
            ),
            "n": pd.Series(
                [1 if f else n for f, n in zip(first, column([1, 2, 3]), strict=True)],
                dtype="int64",
            ),
        }
    )
    return segments, cuts, events, window_days, first_runs


def _same(found: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same rows, values and dtypes; an empty frame only the same columns (the pandas
    versions gave empty columns whatever dtype their path left: object, float)."""
    if expected.empty:
        assert found.empty and list(found) == list(expected)
    else:
        pd.testing.assert_frame_equal(found, expected, check_exact=True)


@settings(max_examples=10, derandomize=True, deadline=None)
@given(cases())
def test_window_tables_count_as_the_pandas_versions_did(case):
    segments, cuts, events, window_days, first_runs = case
    counts = from_segments(segments, cuts, events, window_days)
    expected = reference_from_segments(segments, cuts, events, window_days)
    _same(counts, expected)
    pairs, tagged = windows_of(counts, events, LINEAGE_OF, ["A", "B"], first_runs)
    want_pairs, want_tagged = reference_windows_of(
        expected, events, LINEAGE_OF, ["A", "B"], first_runs
    )
    _same(pairs, want_pairs)
    _same(tagged, want_tagged)
    _same(category_shift_of(pairs, tagged), reference_category_shift_of(pairs, tagged))
    for per_lineage in (True, False):
        _same(
            basis_mix_of(pairs, tagged, per_lineage),
            reference_basis_mix_of(pairs, tagged, per_lineage),
        )


def test_the_reference_sums_a_window_of_segments_and_keeps_each_lineages_first_runs():
    """The reference itself counts: without this, a broken copy could agree with a broken
    function. One event on day 2, a one-day window: segment 1 is the day before, 2 the day
    after, 3 later. Two pass runs of A before; after, a fail and two first runs (runs 10 at
    5:00 and 11 at 1:00), then run 12 at 3:00 later: first_runs=2 keeps 11 and 12."""
    events = event_table([_Event(2, ("A",))])
    day = pd.Timestamp("2026-08-03", tz="UTC")
    cuts = [day - pd.Timedelta(days=1), day, day + pd.Timedelta(days=1)]
    at = [day + pd.Timedelta(hours=h) for h in (5, 1, 3)]
    segments = pd.DataFrame(
        {
            "segment": [1, 1, 2, 2, 2, 3],
            "workflow_path": ["a.yml", "b.yml", "a.yml", "a.yml", "b.yml", "a.yml"],
            "logical_outcome": ["pass", "pass", "fail", "pass", "pass", "pass"],
            "failure_category": [None] * 6,
            "failure_basis": [None] * 6,
            "incident_id": [None] * 6,
            "created_at": pd.to_datetime([pd.NaT, pd.NaT, pd.NaT, *at], utc=True),
            "run_id": [np.nan, np.nan, np.nan, 10.0, 11.0, 12.0],
            "n": [1] * 6,
        }
    )
    counts = reference_from_segments(segments, cuts, events, 1)
    window = counts[counts["side"] != "first"]
    assert window.groupby("side")["n"].sum().to_dict() == {"after": 3, "before": 2}
    _, tagged = reference_windows_of(counts, events, LINEAGE_OF, ["A", "B"], 2)
    firsts = tagged[tagged["side"] == "first"]
    assert firsts["run_id"].tolist() == [11.0, 12.0]
    shift = reference_category_shift_of(*reference_windows_of(counts, events, LINEAGE_OF, ["A"], 2))
    assert shift[["failure_category", "before_count", "after_count"]].values.tolist() == [
        ["unknown", 0, 1]
    ]


def test_no_segment_counts_no_window():
    """The store's frame of no row has untyped (object) columns: no window, no first run, no
    error (the Migrations page of a repository with no run in its scope)."""
    events = event_table([_Event(2, None)])
    day = events["event_date"].iloc[0]
    cuts = [day - pd.Timedelta(days=1), day, day + pd.Timedelta(days=1)]
    counts = from_segments(pd.DataFrame(columns=SEGMENT_COLUMNS), cuts, events, 1)
    assert counts.empty and list(counts) == TALLY_COLUMNS
    pairs, tagged = windows_of(counts, events, LINEAGE_OF, ["A", "B"], 2)
    assert pairs["lineage"].tolist() == ["A", "B"] and tagged.empty
    assert category_shift_of(pairs, tagged).empty
    assert basis_mix_of(pairs, tagged, True)["before_red"].tolist() == [0, 0]
