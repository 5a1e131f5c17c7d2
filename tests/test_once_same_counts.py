"""analytics.once counts in numpy over the groups' codes (#49): on random frames (rows or counts,
one or two keys of every dtype a table groups by, missing keys, unknown and missing outcomes,
all-green groups, rows of no incident, incidents on red rows or any), once_counts and
stability_once give, to the bit and the dtype, what their pandas versions gave: those versions,
copied below as they were, are the reference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.once import ONCE, ONCE_COLUMNS, once_counts, stability_once
from analytics.rates import stability

INCIDENT = "incident_id"


def reference_once_counts(
    frame: pd.DataFrame, incident: pd.Series, by: Sequence[str], weight: str | None = None
) -> pd.DataFrame:
    """analytics.once.once_counts as it was (groupby, map, concat)."""
    keys = list(by)
    hit = incident.notna().to_numpy()
    n = frame[weight].to_numpy() if weight is not None else np.ones(len(frame), dtype=int)
    rest = frame.loc[~hit, [*keys, "logical_outcome"]].assign(n=n[~hit])
    if not hit.any():
        return rest
    red = frame.loc[hit, keys].assign(
        **{INCIDENT: incident.to_numpy()[hit]},
        failed=frame["logical_outcome"].to_numpy()[hit] == "fail",
    )
    failed = red.groupby([*keys, INCIDENT])["failed"].any()
    one = failed.map({True: "fail", False: "flaky"}).rename("logical_outcome").reset_index()
    return pd.concat([rest, one.drop(columns=INCIDENT).assign(n=1)], ignore_index=True)


def reference_stability_once(
    frame: pd.DataFrame,
    incident: pd.Series,
    by: Sequence[str],
    min_runs: int,
    weight: str | None = None,
) -> pd.DataFrame:
    """analytics.once.stability_once as it was (two stabilities and a merge)."""
    today = stability(frame, by, min_runs, weight)
    counted = stability(
        reference_once_counts(frame, incident, by, weight), by, min_runs, weight="n"
    )
    once = counted[[*by, *ONCE_COLUMNS]].rename(columns={c: f"{c}{ONCE}" for c in ONCE_COLUMNS})
    table = today.merge(once, on=list(by), how="left")
    counts = [f"{c}{ONCE}" for c in ("runs", "pass", "flaky", "fail")]
    table[counts] = table[counts].fillna(0).astype(int)
    return table


OUTCOMES = ["pass", "flaky", "fail", "excluded"]
ODD = [None, "cancelled"]  # no outcome; one that is no logical outcome
DAYS = pd.to_datetime(["2026-08-10", "2026-08-11", "2026-08-12"], utc=True)


def _column(kind: str, picks: list[int], missing: list[bool]) -> pd.Series:
    """A key column of ``kind`` with three values (missing where the dtype can be)."""
    if kind == "int":
        return pd.Series(picks, dtype="int64")
    if kind == "bool":
        return pd.Series([p % 2 == 0 for p in picks])
    if kind == "datetime":
        return pd.Series(DAYS[picks]).where(~pd.Series(missing))
    text = pd.Series([f"k{p}" for p in picks]).where(~pd.Series(missing))
    return text.astype("category") if kind == "category" else text


@st.composite
def frames(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.Series, list[str], str | None]:
    """(frame, incident, by, weight) as the tables give them, and odder."""
    size = draw(st.integers(0, 30))
    kinds = draw(
        st.lists(
            st.sampled_from(["str", "int", "bool", "datetime", "category"]), min_size=1, max_size=2
        )
    )
    index = st.integers(0, 2)
    columns: dict[str, pd.Series] = {}
    for at, kind in enumerate(kinds):
        picks = draw(st.lists(index, min_size=size, max_size=size))
        missing = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        columns[f"key{at}"] = _column(
            kind, picks, missing if draw(st.booleans()) else [False] * size
        )
    odd = draw(st.booleans())
    outcome = st.sampled_from(OUTCOMES + ODD if odd else OUTCOMES)
    outcomes = pd.Series(draw(st.lists(outcome, min_size=size, max_size=size)), dtype="str")
    columns["logical_outcome"] = outcomes.astype("category") if draw(st.booleans()) else outcomes
    weight = draw(st.sampled_from([None, "n"]))
    if weight is not None:
        columns[weight] = pd.Series(
            draw(st.lists(st.integers(0, 5), min_size=size, max_size=size)), dtype="int64"
        )
    frame = pd.DataFrame(columns)
    if draw(st.booleans()):  # a frame cut from a larger one: its index is no range
        frame.index = draw(st.permutations(range(10, 10 + size)))
    ids = draw(st.lists(st.sampled_from([None, "i1", "i2", "i3"]), min_size=size, max_size=size))
    incident = pd.Series(ids, index=frame.index, dtype="str")
    if draw(st.booleans()):  # as run_incidents gives them: red rows only
        incident = incident.where(frame["logical_outcome"].isin(["flaky", "fail"]))
    return frame, incident, list(columns)[: len(kinds)], weight


@settings(max_examples=40, derandomize=True)
@given(frames(), st.integers(1, 4))
def test_stability_once_counts_as_the_pandas_version_did(case, min_runs):
    frame, incident, by, weight = case
    expected = reference_stability_once(frame, incident, by, min_runs, weight)
    pd.testing.assert_frame_equal(
        stability_once(frame, incident, by, min_runs, weight), expected, check_exact=True
    )


@settings(max_examples=40, derandomize=True)
@given(frames())
def test_once_counts_rows_are_the_pandas_version_rows(case):
    frame, incident, by, weight = case
    expected = reference_once_counts(frame, incident, by, weight)
    pd.testing.assert_frame_equal(
        once_counts(frame, incident, by, weight), expected, check_exact=True
    )


def test_an_incident_is_one_row_per_group_in_both_versions():
    """The reference itself counts once: without this, a broken copy could agree with a broken
    function. Group A: incident i1 is 3 red rows (a fail among them), one row, a fail; group B:
    i1's one flaky row and a pass of no incident."""
    frame = pd.DataFrame(
        {
            "key0": ["A", "A", "A", "A", "B", "B"],
            "logical_outcome": ["flaky", "fail", "flaky", "pass", "flaky", "pass"],
        }
    )
    incident = pd.Series(["i1", "i1", "i1", None, "i1", None], dtype="str")
    for version in (stability_once, reference_stability_once):
        table = version(frame, incident, ["key0"], 1).set_index("key0")
        assert table["runs"].tolist() == [4, 2]
        assert table[[f"{c}{ONCE}" for c in ("runs", "pass", "flaky", "fail")]].values.tolist() == [
            [2, 1, 0, 1],
            [2, 1, 1, 0],
        ]
