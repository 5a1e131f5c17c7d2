"""Before/after each change event, per lineage it touches: what changed, with honest intervals.

For every event and lineage (the event's ``lineages``, or all): the logical runs in the W days
before the event, the W days after it, and the first N non-excluded runs after it; counts,
rates with Wilson intervals, a two-sided Fisher exact test of pass vs not-pass (flaky + fail:
the success rate's split), the shift in the mix of failure categories, and how much of that mix
is known (analytics.evidence).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln

from analytics.evidence import KNOWN, NO_LOG, described_counts
from analytics.once import INCIDENT, ONCE, largest_incident, run_incidents, stability_once
from analytics.outcomes import in_scope
from analytics.rates import OUTCOMES, add_rates, verdict_label
from store.project import Analysis
from store.vocabulary import COUNTED_OUTCOMES, RED_OUTCOMES

SIDES = ("before", "after", "first")


def event_pairs(events: pd.DataFrame, lineages: Sequence[str]) -> pd.DataFrame:
    """One row per (event, lineage it touches), numbered by ``pair``: the event's lineages, or
    all of ``lineages`` when it names none. ``events``: analytics.config_tables.event_table."""
    named = [list(ls) if ls is not None else list(lineages) for ls in events["event_lineages"]]
    found = [(at, name) for at, names in enumerate(named) for name in names if pd.notna(name)]
    at, lineage = zip(*found, strict=True) if found else ((), ())
    touched = events.drop(columns="event_lineages").iloc[list(at)]
    touched = touched.assign(lineage=pd.Series(lineage, index=touched.index, dtype="str"))
    return touched.reset_index(drop=True).rename_axis("pair").reset_index()


def _naive(times: pd.Series[pd.Timestamp]) -> np.ndarray:
    """UTC times as naive datetime64[ns], for binary search."""
    return times.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


# A window around an event: (start, end, limit): created_at in [date + start, date + end), no
# end when end is None, and only the first ``limit`` rows (by created_at, then run_id).
Window = tuple[pd.Timedelta, pd.Timedelta | None, int | None]


def either_side(window_days: int) -> dict[str, Window]:
    """The W days before an event, [date - W, date), and after it, [date, date + W)."""
    window, zero = pd.Timedelta(days=window_days), pd.Timedelta(0)
    return {"before": (-window, zero, None), "after": (zero, window, None)}


def rows_around(
    frame: pd.DataFrame, pairs: pd.DataFrame, windows: Mapping[str, Window]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, pair, side): the positions in ``frame`` of its rows in each window around each
    (event, lineage) ``pair`` of their lineage, each with its ``pair`` and ``side`` (the
    window's place in ``windows``); created_at must be UTC-aware and never missing, as the
    store returns it. Found by binary search in each lineage's time-ordered row positions, so
    the cost is the rows returned, not rows x events, and the frame itself is never copied."""
    times = _naive(frame["created_at"])
    codes, lineages = pd.factorize(frame["lineage"], sort=True)
    order = np.lexsort((frame["run_id"].to_numpy(), times, codes))
    starts = np.searchsorted(codes[order], np.arange(len(lineages) + 1))
    positions = {name: order[starts[i] : starts[i + 1]] for i, name in enumerate(lineages)}
    chosen, pair_tags, side_tags = [np.empty(0, dtype=np.int64)], [], []
    pair_dates, pair_ids = _naive(pairs["event_date"]), pairs["pair"].to_numpy()
    pair_lineages = pairs["lineage"].to_numpy(dtype=object)
    for lineage in dict.fromkeys(pair_lineages):  # the pairs' lineages, in their order
        rows = positions.get(lineage)
        if rows is None:
            continue
        mine = pair_lineages == lineage
        lineage_times, dates = times[rows], pair_dates[mine]
        for side, (start, end, limit) in enumerate(windows.values()):
            lows = np.searchsorted(lineage_times, dates + start.to_timedelta64())
            highs = (
                np.searchsorted(lineage_times, dates + end.to_timedelta64())
                if end is not None
                else np.full(len(dates), len(rows))
            )
            if limit is not None:
                highs = np.minimum(highs, lows + limit)
            for pair, low, high in zip(pair_ids[mine], lows, highs, strict=True):
                chosen.append(rows[low:high])
                pair_tags.append(np.full(max(high - low, 0), pair, dtype=np.int64))
                side_tags.append(np.full(max(high - low, 0), side, dtype=np.int64))
    none = np.empty(0, dtype=np.int64)
    return (
        np.concatenate(chosen),
        np.concatenate([none, *pair_tags]),
        np.concatenate([none, *side_tags]),
    )


# The counts every window table starts from (store.migration_counts.segment_tally counts the
# same in the database): per event (its position in the events), side and group, ``n`` runs.
TALLY_COLUMNS = [
    "event",
    "side",
    "workflow_path",
    "logical_outcome",
    "failure_category",
    "failure_basis",
    INCIDENT,
    "created_at",
    "run_id",
    "n",
]


def as_tally(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with TALLY_COLUMNS' dtypes, whichever path computed it."""
    out = frame if list(frame.columns) == TALLY_COLUMNS else frame.reindex(columns=TALLY_COLUMNS)
    # only the columns not of their dtype yet converted (from_segments makes them so)
    wanted = {"event": "int64", "n": "int64", "run_id": "float64"}
    changed = {column: kind for column, kind in wanted.items() if out[column].dtype != kind}
    out = out.astype(changed) if changed else out
    times = out["created_at"].dtype
    if isinstance(times, pd.DatetimeTZDtype) and str(times.tz) == "UTC":
        return out
    return out.assign(created_at=pd.to_datetime(out["created_at"], utc=True))


def tally(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    window_days: int,
    first_runs: int,
    incident: pd.Series,
) -> pd.DataFrame:
    """The window counts from the runs themselves (the raw path): per event and side (before,
    after), the runs of each group of TALLY_COLUMNS; and the first ``first_runs`` counted runs
    of each workflow at or after the event, one row each (side ``first``, with created_at and
    run_id). ``incident``: each red run's incident (run_incidents), aligned on ``runs``;
    ``events``' index numbers them."""
    frame = runs.assign(**{INCIDENT: incident})
    keys = [c for c in TALLY_COLUMNS[2:7] if c in frame]  # a frame without categories: none
    counted = frame[frame["logical_outcome"] != "excluded"]
    counted = counted.sort_values(["created_at", "run_id"], kind="stable")
    parts = [pd.DataFrame(columns=TALLY_COLUMNS)]
    window = pd.Timedelta(days=window_days)
    for event, date in events["event_date"].items():
        for side, start, end in (("before", date - window, date), ("after", date, date + window)):
            rows = frame[(frame["created_at"] >= start) & (frame["created_at"] < end)]
            found = rows.groupby(keys, dropna=False).size().rename("n").reset_index()
            parts.append(found.assign(event=event, side=side))
        first = counted[counted["created_at"] >= date].groupby("workflow_path").head(first_runs)
        parts.append(first[[*keys, "created_at", "run_id"]].assign(event=event, side="first", n=1))
    return as_tally(pd.concat([p for p in parts if len(p)] or parts, ignore_index=True))


def from_segments(
    segments: pd.DataFrame, cuts: Sequence[pd.Timestamp], events: pd.DataFrame, window_days: int
) -> pd.DataFrame:
    """The window counts (TALLY_COLUMNS) from the database's counts per segment between the
    sorted ``cuts`` (store.migration_counts.segment_tally; ``cuts`` hold each event's date and
    the ends of its windows): a window is the sum of its segments, an event's first runs are
    the first runs of the segments after its date. ``events``' index numbers them. In numpy
    over cumulative sums per segment of each group (the rows of pandas' groupby, in its
    order), where a merge of windows and segments and two groupbys cost a page 25 ms."""
    position = {cut: index for index, cut in enumerate(cuts)}
    window = pd.Timedelta(days=window_days)
    segment = segments["segment"].to_numpy(dtype=np.int64)  # object when the store has none
    counted, keyed = np.flatnonzero(segment < len(cuts)), TALLY_COLUMNS[2:7]
    group, first_of = _group_codes(segments.iloc[counted], keyed)
    per_segment = np.zeros((len(cuts) + 1, len(first_of)), dtype=np.int64)
    n = segments["n"].to_numpy(dtype=np.int64)
    np.add.at(per_segment, (segment[counted], group), n[counted])
    below = np.cumsum(np.vstack([per_segment[:1] * 0, per_segment]), axis=0)  # segments < s
    rows, events_at, sides, sums = [np.empty(0, dtype=np.int64)], [], [], []
    for event, date in sorted(events["event_date"].items()):
        for side, start, end in (("after", date, date + window), ("before", date - window, date)):
            window_sums = below[position[end] + 1] - below[position[start] + 1]
            hit = np.flatnonzero(window_sums)
            rows.append(counted[first_of[hit]])
            sums.append(window_sums[hit])
            events_at += [event] * len(hit)
            sides += [side] * len(hit)
    firsts = np.flatnonzero(segments["run_id"].notna().to_numpy())
    firsts = firsts[np.argsort(segment[firsts], kind="stable")]  # the merge's order
    first = [np.empty(0, dtype=np.int64)]
    for event, date in events["event_date"].items():
        first.append(firsts[np.searchsorted(segment[firsts], position[date] + 1) :])
        events_at += [event] * len(first[-1])
        sides += ["first"] * len(first[-1])
    row, first_row = np.concatenate(rows), np.concatenate(first)
    keys = np.concatenate([row, first_row])  # the group's first row, or the first run's
    times = np.concatenate([np.full(len(row), -1), first_row])  # none on a window's rows
    frame = pd.DataFrame(
        {
            "event": np.array(events_at, dtype=np.int64),
            "side": pd.Series(sides, dtype="str"),
            **{c: segments[c].iloc[keys].reset_index(drop=True) for c in keyed},
            **{c: segments[c].array.take(times, allow_fill=True) for c in ("created_at", "run_id")},
            "n": np.concatenate([*sums, n[first_row]]),
        }
    )
    return as_tally(frame)


def _group_codes(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's group of ``keys`` numbered in the order of pandas' groupby (sorted, missing
    values last, dropna=False), and each group's first row."""
    codes, sizes = [], []
    for key in keys:
        code, uniques = pd.factorize(frame[key], sort=True)
        codes.append(np.where(code < 0, len(uniques), code))
        sizes.append(len(uniques) + 1)
    flat = np.ravel_multi_index(codes, sizes) if len(frame) else np.empty(0, dtype=np.int64)
    _, first_of, group = np.unique(flat, return_index=True, return_inverse=True)
    return group, first_of


def windows_of(
    counts: pd.DataFrame,
    events: pd.DataFrame,
    lineage_of: pd.Series,
    lineages: Sequence[str],
    first_runs: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, tagged): the (event, lineage) pairs (event_pairs), and the window counts
    (``counts``: TALLY_COLUMNS) of each pair with its ``pair`` and ``lineage`` (``lineage_of``:
    workflow_path -> lineage); the first side keeps a lineage's first ``first_runs`` runs.
    ``events``' index numbers them, as in ``counts``' ``event``."""
    pairs = event_pairs(events.rename_axis("event").reset_index(), lineages)
    path, paths = pd.factorize(counts["workflow_path"])  # each workflow mapped once
    lineage = pd.Series(paths).map(lineage_of)
    names = pd.Index(pairs["lineage"].unique())
    code = np.append(names.get_indexer(lineage), -1)[path]  # -1: no event touches it, or none
    key = np.where(code >= 0, counts["event"].to_numpy() * len(names) + code, -1)
    pair_keys = pairs["event"].to_numpy() * len(names) + names.get_indexer(pairs["lineage"])
    by_key = np.argsort(pair_keys, kind="stable")
    low = np.searchsorted(pair_keys[by_key], key, "left")
    matches = np.searchsorted(pair_keys[by_key], key, "right") - low  # the pairs of each row
    first = (counts["side"] == "first").to_numpy()
    times = counts["created_at"]
    firsts = np.flatnonzero(first & (matches > 0))
    firsts = firsts[
        np.lexsort(
            (counts["run_id"].to_numpy()[firsts], times.array.asi8[firsts], times.isna()[firsts])
        )
    ]
    rows = np.concatenate(
        [np.flatnonzero(~first & (matches > 0)), firsts[group_ranks(key[firsts]) < first_runs]]
    )
    each = np.repeat(rows, matches[rows])  # a row per pair of its (event, lineage), as merge
    nth = np.arange(len(each)) - np.repeat(np.cumsum(matches[rows]) - matches[rows], matches[rows])
    pair = pairs["pair"].to_numpy()[by_key[np.repeat(low[rows], matches[rows]) + nth]]
    tagged = counts.iloc[each].assign(lineage=lineage.array.take(path[each]), pair=pair)
    return pairs.drop(columns="event"), tagged.reset_index(drop=True)


def group_ranks(groups: np.ndarray) -> np.ndarray:
    """Each element's place among the equal ``groups`` before it (groupby's cumcount)."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = np.arange(len(groups)) - np.repeat(starts, np.diff(np.r_[starts, len(groups)]))
    return ranks


def _scoped_windows(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    lineages: Sequence[str] | None,
    scope: str,
    default_branch: str,
    analysis: Analysis,
    members: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """windows_of the runs of ``scope`` (``members``: the incidents' failures; None: none).
    Runs without a workflow_path count each lineage as one workflow."""
    known = lineages if lineages is not None else sorted(runs["lineage"].dropna().unique())
    scoped = runs[in_scope(runs, scope, default_branch)]
    if "workflow_path" not in scoped:
        scoped = scoped.assign(workflow_path=scoped["lineage"])
    no_members = pd.DataFrame({"run_id": [], INCIDENT: []})
    incident = run_incidents(scoped, no_members if members is None else members)
    counts = tally(scoped, events, analysis.window_days, analysis.first_runs, incident)
    lineage_of = scoped.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"]
    return windows_of(counts, events, lineage_of, known, analysis.first_runs)


def before_after(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    analysis: Analysis,
    *,
    default_branch: str,
    scope: str = "default",
    lineages: Sequence[str] | None = None,
    members: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (event, lineage): event_date, event_pr, event_title, event_kind, lineage,
    scope, window_days; for each side in before / after / first the columns ``<side>_<c>`` for
    c in runs (= pass + flaky + fail), pass, flaky, fail, excluded, success_rate(_low, _high),
    eventual_success(_low, _high), flake_rate(_low, _high), enough_data, and the same counted
    once (``<side>_<c>_once``, analytics.once.ONCE_COLUMNS); then ``p_value`` (before vs
    after), ``first_p_value`` (before vs the first N) and ``p_value_once``; for before and
    after, the largest incident of the window (``<side>_incident_id``, NaN: none) and its red
    runs (``<side>_incident_red``). W, N and the runs a side needs for a verdict are
    ``analysis``'s window_days, first_runs and min_runs. ``members``: the incidents' failures
    (store.incidents.load_members); None: no incident, so once equals today."""
    pairs, tagged = _scoped_windows(
        runs, events, lineages, scope, default_branch, analysis, members
    )
    return before_after_of(pairs, tagged, analysis, scope)


def before_after_of(
    pairs: pd.DataFrame, tagged: pd.DataFrame, analysis: Analysis, scope: str
) -> pd.DataFrame:
    """before_after's table from the window counts of ``windows_of``."""
    window_days, min_runs = analysis.window_days, analysis.min_runs
    tagged, pairs = tagged.reset_index(drop=True), pairs.reset_index(drop=True)
    incident = tagged[INCIDENT]
    # every column gathered, then one frame: a column set at a time on the wide table, and a
    # frame of the sides' columns concatenated to it, cost the page 10 ms
    table: dict[str, Any] = {
        **{column: pairs[column] for column in pairs.columns.drop("pair")},
        "scope": pd.Series(scope, index=pairs.index, dtype="str"),
        "window_days": np.full(len(pairs), window_days, dtype=np.int64),
    }
    rates = stability_once(tagged, incident, ["pair", "side"], min_runs, "n")
    table.update(_by_side(rates, pairs["pair"], min_runs))
    table["p_value"] = fisher_p_values(table, "before", "after")
    table["first_p_value"] = fisher_p_values(table, "before", "first")
    table["p_value_once"] = fisher_p_values(table, "before", "after", ONCE)
    largest = largest_incident(tagged, incident, ["pair", "side"], "n")
    for side in ("before", "after"):
        mine = largest[largest["side"] == side].set_index("pair")
        table[f"{side}_{INCIDENT}"] = pairs["pair"].map(mine[INCIDENT])
        red = pairs["pair"].map(mine["incident_red"]).fillna(0)
        table[f"{side}_incident_red"] = red.astype(int)
    return pd.DataFrame(table, index=pairs.index)


def _by_side(rates: pd.DataFrame, pairs: pd.Series, min_runs: int) -> dict[str, np.ndarray]:
    """``rates`` (stability_once per pair and side) as the columns ``<side>_<column>`` of
    each pair of ``pairs`` (aligned on it; each pair once): counts 0 and rates NaN where a
    side has no row; picked by position, where a merge per side cost the table 15 ms."""
    pair = pd.Index(pairs).get_indexer(pd.Index(rates["pair"]))
    side = pd.Index(SIDES).get_indexer(pd.Index(rates["side"]))
    mine = (pair >= 0) & (side >= 0)
    row = np.full((len(SIDES), len(pairs)), -1)  # each side's row of each pair (-1: none)
    row[side[mine], pair[mine]] = np.flatnonzero(mine)
    names = rates.columns.drop(["pair", "side"])
    counts = {"runs", *OUTCOMES, *(f"{c}{ONCE}" for c in ("runs", *COUNTED_OUTCOMES))}
    # each column, then what a side without a row has (0 runs, no rate): row -1 picks it
    values = {c: np.append(rates[c].to_numpy(), 0 if c in counts else np.nan) for c in names}
    columns: dict[str, np.ndarray] = {}
    for at, name in enumerate(SIDES):
        columns.update({f"{name}_{column}": values[column][row[at]] for column in names})
        columns[f"{name}_enough_data"] = columns[f"{name}_runs"] >= min_runs
    return columns


def fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """The two-sided Fisher exact p of [[a, b], [c, d]]: the probability, under fixed margins,
    of every table at most as likely as this one (scipy.stats.fisher_exact's definition; "at
    most" with R's fisher.test relative tolerance, 1e-7), from log-factorials in numpy: scipy's
    function costs a millisecond a call, which a page pays twice per event and lineage."""
    return float(_fisher_many(*(np.array([x], dtype=np.int64) for x in (a, b, c, d)))[0])


def _fisher_many(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """fisher_two_sided of each table [[a, b], [c, d]] of the arrays: the log-probabilities
    of every table's support in one array (a row each, padded to the widest), each p then
    summed over its own row, as fisher_two_sided sums one table's."""
    rows, column, total = a + b, a + c, a + b + c + d
    low = np.maximum(0, column - (c + d))
    width = np.minimum(rows, column) + 1 - low
    support = low[:, None] + np.arange(width.max(initial=0))[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):  # the padding past a row's support
        log_pmf = (
            _log_choose(rows[:, None], support)
            + _log_choose((total - rows)[:, None], column[:, None] - support)
            - _log_choose(total, column)[:, None]
        )
    tolerance = np.log1p(1e-7)
    p = np.empty(len(a))
    for row, (start, size) in enumerate(zip(a - low, width, strict=True)):
        mine = log_pmf[row, :size]
        p[row] = min(1.0, np.exp(mine[mine <= mine[start] + tolerance]).sum())
    return p


def _log_choose(n: int | np.ndarray, k: int | np.ndarray) -> np.ndarray:
    log_choose: np.ndarray = (
        gammaln(np.add(n, 1)) - gammaln(np.add(k, 1)) - gammaln(np.subtract(n, k) + 1)
    )
    return log_choose


SIGNIFICANT = 0.05  # a before/after p-value under this is a "significant change"


def headline(rows: pd.DataFrame, analysis: Analysis, incidents: pd.DataFrame | None = None) -> str:
    """One sentence on an event's before/after, from its rows of ``before_after`` (one per
    lineage it touches), e.g. "#7357: successors 0.82 [0.73, 0.88] n=99 in the 14 days after,
    vs predecessors 0.92 [0.75, 0.98] n=25 in the 14 days before; no significant change
    (p=0.31)" (successors and predecessors for a migration, after and before otherwise).
    Several lineages are pooled: their counts are summed (a run has one lineage), the success
    rate and its Wilson interval are of the pooled counts and p is the Fisher test of the
    pooled counts, never an average of rates. A side under ``min_runs`` runs has "not enough
    data" and the sentence no verdict; "significant" only when p < 0.05, with its direction.
    When counting incidents once changes that answer, the sentence names the incident behind
    it and gives the answer counted once: "...; significant change, worse (p=0.048); 60% of
    the after window's red runs are one incident on 2026-08-14 (HF Hub, 23 jobs); counted
    once: no significant change (p=0.41)". ``incidents``: store.incidents.load_incidents,
    for the incident's date and cause."""
    return headlines(rows, [np.arange(len(rows))], analysis, incidents)[0]


def headlines(
    table: pd.DataFrame,
    events: Sequence[np.ndarray],
    analysis: Analysis,
    incidents: pd.DataFrame | None = None,
) -> list[str]:
    """The headline of each event's rows of ``table`` (``events``: their positions), their
    pooled rates computed in one frame and their rows never copied: a frame, a copy of a wide
    table and rates per event cost a page's answers a quarter of a second."""
    window_days, min_runs = analysis.window_days, analysis.min_runs
    if table.empty:
        return [f"No runs in the {window_days} days either side." for _ in events]
    pooled = _pooled(table, events, min_runs)
    labels = verdict_label(pooled).tolist()
    records = pooled.to_dict("records")
    pr, title, kind, lineage = (
        table[column].to_numpy(dtype=object)
        for column in ("event_pr", "event_title", "event_kind", "lineage")
    )
    sentences = []
    for index, rows in enumerate(events):
        if not len(rows):
            sentences.append(f"No runs in the {window_days} days either side.")
            continue
        first = rows[0]
        label = f"#{int(pr[first])}" if pd.notna(pr[first]) else title[first]
        if (lineages := len({name for name in lineage[rows] if pd.notna(name)})) > 1:
            label += f" ({lineages} lineages pooled)"
        migration = kind[first] == "migration"
        names = {"after": "successors", "before": "predecessors"} if migration else {}
        at = index * len(POOLED)
        mine = dict(zip(POOLED, records[at : at + len(POOLED)], strict=True))
        said = ", vs ".join(
            f"{names.get(side, side)} {labels[at + POOLED.index(side)]} in the {window_days} "
            f"days {side}"
            for side in ("after", "before")
        )
        answer = _answer(mine, "")
        if answer == NO_ANSWER:
            sentences.append(
                f"{label}: {said}; not enough data to compare (a side has fewer than "
                f"{min_runs} runs)"
            )
            continue
        sentence = f"{label}: {said}; {answer}"
        once = _answer(mine, ONCE)
        if _conclusion(once) != _conclusion(answer):
            share = _incident_share(table.iloc[rows], incidents)
            sentence += f"; {share}; counted once: {once}"
        sentences.append(sentence)
    return sentences


NO_ANSWER = "not enough data"
# the pooled sides of an event (side, suffix), in their order in _pooled's rows, and their names
POOLED_SIDES = [(side, suffix) for suffix in ("", ONCE) for side in ("after", "before")]
POOLED = [f"{side}{suffix}" for side, suffix in POOLED_SIDES]


def _pooled(table: pd.DataFrame, events: Sequence[np.ndarray], min_runs: int) -> pd.DataFrame:
    """Each side's counts summed over each event's rows of ``table``, with rates: per event,
    one row per side of POOLED, as it is (``after``, ``before``) and counted once
    (``after_once``, ``before_once``)."""
    columns = ["runs", *COUNTED_OUTCOMES]
    summed = [f"{side}_{c}{suffix}" for side, suffix in POOLED_SIDES for c in columns]
    every = table[summed].to_numpy(dtype=np.int64)
    counts = np.array([every[rows].sum(axis=0) for rows in events], dtype=np.int64)
    frame = pd.DataFrame(counts.reshape(-1, len(columns)), columns=columns)
    return add_rates(frame.assign(excluded=0), min_runs)


def _answer(pooled: Mapping[str, Mapping[Hashable, Any]], suffix: str) -> str:
    """The pooled before/after answer of the counts ending in ``suffix`` (an event's rows of
    ``_pooled`` by side): "no significant change (p=0.31)", "significant change, worse
    (p=0.048)", or NO_ANSWER."""
    after, before = (pooled[f"{side}{suffix}"] for side in ("after", "before"))
    if not (after["enough_data"] and before["enough_data"]):
        return NO_ANSWER
    a, c = int(before["pass"]), int(after["pass"])
    p = fisher_two_sided(a, int(before["runs"]) - a, c, int(after["runs"]) - c)
    if p >= SIGNIFICANT:
        return f"no significant change ({_p(p)})"
    better = after["success_rate"] > before["success_rate"]
    return f"significant change, {'better' if better else 'worse'} ({_p(p)})"


def _conclusion(answer: str) -> str:
    """An answer without its p-value: what a reader concludes from it."""
    return answer.split(" (", 1)[0]


def _incident_share(rows: pd.DataFrame, incidents: pd.DataFrame | None) -> str:
    """The incident that weighs most on a window of ``rows``: "60% of the after window's red
    runs are one incident on 2026-08-14 (HF Hub, 23 jobs)" (the after window first on a tie)."""
    best: tuple[float, str, str] = (-1.0, "after", "")
    for side in ("after", "before"):
        hit = rows.dropna(subset=[f"{side}_{INCIDENT}"])
        if hit.empty:
            continue
        red = hit.groupby(f"{side}_{INCIDENT}")[f"{side}_incident_red"].sum()
        share = red.max() / max(int(rows[f"{side}_flaky"].sum() + rows[f"{side}_fail"].sum()), 1)
        if share > best[0]:
            best = (float(share), side, str(red.idxmax()))
    share, side, incident = best
    named = "one incident"
    found = incidents[incidents["id"] == incident] if incidents is not None else None
    for at, cause, jobs in [] if found is None else found[["started_at", "label", "jobs"]].values:
        named += f" on {at:%Y-%m-%d} ({cause}, {int(jobs)} jobs)"
    return f"{max(share, 0.0):.0%} of the {side} window's red runs are {named}"


def _p(p: float) -> str:
    """p to two significant digits ("p=0.31", "p=0.014"), or "p<0.001"."""
    return "p<0.001" if p < 0.001 else f"p={p:.2f}" if p >= 0.1 else f"p={p:.2g}"


def fisher_p_values(
    table: pd.DataFrame | Mapping[str, Any], left: str, right: str, suffix: str = ""
) -> np.ndarray:
    """Two-sided Fisher exact p of pass vs (flaky + fail) between two sides, per row, of the
    counts ending in ``suffix`` (``_once``: counted once); NaN when a side has no runs.
    ``table``: a frame, or its columns by name."""
    a, c = (np.asarray(table[f"{side}_pass{suffix}"], dtype=np.int64) for side in (left, right))
    b = np.asarray(table[f"{left}_runs{suffix}"], dtype=np.int64) - a
    d = np.asarray(table[f"{right}_runs{suffix}"], dtype=np.int64) - c
    p = np.full(len(a), np.nan)
    both = (a + b > 0) & (c + d > 0)
    p[both] = _fisher_many(a[both], b[both], c[both], d[both])
    return p


def category_shift(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    analysis: Analysis,
    *,
    default_branch: str,
    scope: str = "default",
    lineages: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The mix of failure categories of red logical runs (fail or flaky) in the W days before
    and after each (event, lineage). One row per category seen on either side: the event
    columns, lineage, failure_category, ``<side>_count``, ``<side>_share`` (of the side's red
    runs), ``<side>_per_run`` (of its non-excluded runs), ``shift`` = after - before share.
    ``runs`` need failure_category (a red run without one counts as ``unknown``)."""
    pairs, tagged = _scoped_windows(runs, events, lineages, scope, default_branch, analysis)
    return category_shift_of(pairs, tagged)


def category_shift_of(pairs: pd.DataFrame, tagged: pd.DataFrame) -> pd.DataFrame:
    """category_shift's table from the window counts of ``windows_of``: summed in numpy per
    pair, category and side, where pandas' groupbys, unstacks and merge cost it 25 ms."""
    side = tagged["side"].to_numpy(dtype=object)
    outcome = tagged["logical_outcome"].to_numpy(dtype=object)
    kept = np.flatnonzero(((side == "before") | (side == "after")) & (outcome != "excluded"))
    pair = pd.Index(pairs["pair"]).get_indexer(tagged["pair"].to_numpy()[kept])
    after, n = (side[kept] == "after").astype(np.int64), tagged["n"].to_numpy()[kept]
    red = np.isin(outcome[kept], list(RED_OUTCOMES))
    runs, reds = np.zeros((2, len(pairs), 2), dtype=np.int64)
    np.add.at(runs, (pair, after), n)
    np.add.at(reds, (pair[red], after[red]), n[red])
    category = tagged["failure_category"].iloc[kept[red]].fillna("unknown")
    code, names = pd.factorize(category, sort=True)
    counts = np.zeros((len(pairs), len(names), 2), dtype=np.int64)
    np.add.at(counts, (pair[red], code, after[red]), n[red])
    at, found = np.nonzero(counts.sum(axis=2))  # the pairs' order, then the categories'
    out = pairs.drop(columns=["pair", "event_lineages"], errors="ignore").iloc[at]
    # the counts' columns made at once beside the pairs', not set one at a time (3 ms)
    columns: dict[str, Any] = {"failure_category": names.take(found)}
    columns["before_count"], columns["after_count"] = counts[at, found, 0], counts[at, found, 1]
    for index, name in ((0, "before"), (1, "after")):
        count = counts[at, found, index]
        with np.errstate(invalid="ignore", divide="ignore"):  # no red run, no run: NaN
            columns[f"{name}_share"] = np.where(
                reds[at, index] > 0, count / reds[at, index], np.nan
            )
            columns[f"{name}_per_run"] = np.where(
                runs[at, index] > 0, count / runs[at, index], np.nan
            )
    after_share, before_share = columns["after_share"], columns["before_share"]
    columns["shift"] = np.where(np.isnan(after_share), 0, after_share) - np.where(
        np.isnan(before_share), 0, before_share
    )
    return pd.concat([out.reset_index(drop=True), pd.DataFrame(columns)], axis=1)


KNOWN_COLUMNS = [f"{side}_{c}" for side in ("before", "after") for c in ("known", "basis")]


def as_exported(table: pd.DataFrame, known: pd.DataFrame) -> pd.DataFrame:
    """``before_after``'s table as ``ciflake export before-after`` and the Migrations page both
    show it, one path for the two: ``<side>_known`` and ``<side>_basis`` of ``basis_mix`` (per
    lineage) joined on each (event, lineage), and the before / after Wilson bounds named
    ``<side>_ci_<low|high>``, counted once too (``..._once``)."""
    keys = ["event_date", "event_title", "lineage"]
    renamed = {
        f"{side}_success_rate_{bound}{end}": f"{side}_ci_{bound}{end}"
        for side in ("before", "after")
        for bound in ("low", "high")
        for end in ("", ONCE)
    }
    return table.merge(known[[*keys, *KNOWN_COLUMNS]], on=keys, how="left").rename(columns=renamed)


def basis_mix(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    analysis: Analysis,
    *,
    default_branch: str,
    scope: str = "default",
    lineages: Sequence[str] | None = None,
    per_lineage: bool = True,
) -> pd.DataFrame:
    """How much of the category mix of ``category_shift`` is known, from the same red runs:
    one row per (event, lineage), or per event over the lineages it touches when not
    ``per_lineage``. Columns: the event columns, lineage (per lineage only), and for before /
    after ``<side>_red`` (red runs), ``<side>_known`` (share whose category is known; NaN
    without red runs) and ``<side>_basis`` (analytics.evidence.describe). ``runs`` need
    failure_basis; a red run without one counts as "unknown: no log", as category_shift
    counts it ``unknown``."""
    pairs, tagged = _scoped_windows(runs, events, lineages, scope, default_branch, analysis)
    return basis_mix_of(pairs, tagged, per_lineage)


def basis_mix_of(pairs: pd.DataFrame, tagged: pd.DataFrame, per_lineage: bool) -> pd.DataFrame:
    """basis_mix's table from the window counts of ``windows_of``: each mix summed in plain
    Python over the red rows (a few hundred), where a groupby and a map cost it 10 ms."""
    if per_lineage:
        pairs = pairs.assign(group=pairs["pair"])
    else:
        pairs = pairs.assign(
            group=pairs.groupby(["event_date", "event_title"], sort=False).ngroup()
        )
    group_of = dict(zip(pairs["pair"].tolist(), pairs["group"].tolist(), strict=True))
    sides = tagged["side"].to_numpy(dtype=object)
    red = np.flatnonzero(
        np.isin(tagged["logical_outcome"], list(RED_OUTCOMES)) & (sides != "first")
    )
    summed: dict[tuple[str, int], dict[str, int]] = {}
    basis = tagged["failure_basis"].iloc[red].fillna(NO_LOG).tolist()
    for at, pair, base, n in zip(
        sides[red].tolist(),
        tagged["pair"].to_numpy()[red].tolist(),
        basis,
        tagged["n"].to_numpy()[red].tolist(),
        strict=True,
    ):
        red_of = summed.setdefault((at, group_of[pair]), {})
        red_of[base] = red_of.get(base, 0) + n
    mixes = {key: {base: found[base] for base in sorted(found)} for key, found in summed.items()}
    return basis_columns(pairs, mixes, per_lineage)


def basis_columns(
    pairs: pd.DataFrame, mixes: dict[tuple[str, int], dict[str, int]], per_lineage: bool
) -> pd.DataFrame:
    """basis_mix's rows, one per ``group`` of ``pairs``, from ``mixes``: (side, group) -> red
    runs per failure basis."""
    # a pair is its own group (per lineage): no duplicates to drop; the sides' columns made
    # at once, where a drop_duplicates and a column set at a time cost the two tables 5 ms
    out = pairs if per_lineage else pairs.drop_duplicates("group")
    groups = out["group"].tolist()
    dropped = ["group", "pair", "event_lineages", *(() if per_lineage else ("lineage",))]
    out = out.drop(columns=dropped, errors="ignore").reset_index(drop=True)
    sides: dict[str, list[Any]] = {}
    for side in ("before", "after"):
        mix = [mixes.get((side, group), {}) for group in groups]
        red_n = [sum(bases.values()) for bases in mix]
        known = [sum(n for basis, n in bases.items() if basis in KNOWN) for bases in mix]
        sides[f"{side}_red"] = red_n
        sides[f"{side}_known"] = [k / n if n else np.nan for k, n in zip(known, red_n, strict=True)]
        sides[f"{side}_basis"] = [described_counts(bases) for bases in mix]
    return pd.concat([out, pd.DataFrame(sides)], axis=1)
