"""Rows ordered into sequences (one per combination of key values, in time order), on numpy
positions: what time to repair and job verdicts walk. The same steps in pandas (a sort on
several columns, a group number, a shift or a backward fill per group) cost milliseconds each
in fixed overhead, which added up to a tenth of a second on the Flaky jobs page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd


def ordered(
    frame: pd.DataFrame, keys: Sequence[str], rows: np.ndarray, within: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(positions, group): ``rows`` (positions in ``frame``) sorted by the ``keys`` (each in
    value order, missing values last, as ``sort_values`` puts them) and then by the ``within``
    columns (numbers or times), stably; and the number of each row's key combination."""
    group = np.zeros(len(rows), dtype=np.int64)
    codes = []
    for key in keys:
        code = frame[key].iloc[rows].factorize(sort=True, use_na_sentinel=False)[0]
        group = group * (int(code.max(initial=0)) + 1) + code
        codes.append(code)
    times = [_sortable(frame[column].iloc[rows]) for column in within]
    order = np.lexsort([*reversed(times), *reversed(codes)])
    return rows[order], group[order]


def _sortable(values: pd.Series) -> np.ndarray:
    """Numbers as they are; times with a zone as numpy's UTC times, which sort alike."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_convert(None)
    return values.to_numpy()


def continues(group: np.ndarray) -> np.ndarray:
    """Whether each row of an ``ordered`` sequence has the same key as the row before it."""
    same = np.zeros(len(group), dtype=bool)
    same[1:] = group[1:] == group[:-1]
    return same


def neighbours(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(previous, next): the position of each row's neighbour in its own sequence of an
    ``ordered`` result; -1 where there is none."""
    same = continues(group)
    positions = np.arange(len(group))
    previous = np.where(same, positions - 1, -1)
    following = np.full(len(group), -1)
    following[:-1] = np.where(same[1:], positions[1:], -1)
    return previous, following


class Pairs(NamedTuple):
    """Sums of some values per pair of keys, as a groupby of both sums them (sorted, missing
    keys dropped), counted in numpy over the keys' codes: a grouping's index and named
    aggregation cost the Overview's changepoints and job x day grid more than the sums."""

    cells: np.ndarray  # each pair as its first key's code x width + its second's, sorted
    width: int
    firsts: pd.Index  # the keys' sorted values
    seconds: pd.Index
    sums: list[np.ndarray]  # of each of the values, per pair

    @classmethod
    def of(cls, first: pd.Series, second: pd.Series, *values: np.ndarray) -> Pairs:
        one, firsts = pd.factorize(first, sort=True)
        two, seconds = pd.factorize(second, sort=True)
        kept, width = (one >= 0) & (two >= 0), max(len(seconds), 1)
        cells, cell = np.unique(one[kept] * width + two[kept], return_inverse=True)
        sums = [np.bincount(cell, weights=v[kept], minlength=len(cells)) for v in values]
        return cls(cells, width, pd.Index(firsts), pd.Index(seconds), sums)

    def at(self, first: pd.Series, second: pd.Series) -> np.ndarray:
        """Each row's pair of keys (``first``, ``second``) as its place in ``cells``; -1: none."""
        one, two = (
            keys.get_indexer(pd.Index(row))
            for keys, row in ((self.firsts, first), (self.seconds, second))
        )
        cell = np.where((one >= 0) & (two >= 0), one * self.width + two, -1)
        place = np.searchsorted(self.cells, cell)
        found = (cell >= 0) & (place < len(self.cells))
        found[found] = self.cells[place[found]] == cell[found]
        return np.where(found, place, -1)
