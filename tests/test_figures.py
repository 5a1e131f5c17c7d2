"""A chart's figure is built once for the same tables and again for any change in them
(dashboard.figures, #49): a rerun of a page draws the figure it drew before, never an older
one."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import plotly.graph_objects as go
import pytest

from dashboard import figures


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    figures._built.clear()
    yield
    figures._built.clear()


BUILT: list[tuple[object, ...]] = []


def bars(table: pd.DataFrame, label: str = "runs") -> go.Figure:
    """A builder that notes each build."""
    BUILT.append((table, label))
    return go.Figure({"data": [{"type": "bar", "x": table["x"], "y": table["y"]}]})


def columns(table: pd.DataFrame, label: str = "runs") -> go.Figure:
    """Another builder, of the same arguments."""
    BUILT.append((table, label))
    return go.Figure({"data": [{"type": "bar", "x": table["y"], "y": table["x"]}]})


def table() -> pd.DataFrame:
    return pd.DataFrame({"x": ["a", "b", "c"], "y": [1, 2, 3]})


def test_the_same_tables_draw_the_figure_built_before() -> None:
    BUILT.clear()
    first = figures.drawn(bars, table())
    again = figures.drawn(bars, table())  # equal tables, other objects: a cached table's copy
    assert again is first and len(BUILT) == 1
    assert list(again.data[0].y) == [1, 2, 3]


@pytest.mark.parametrize(
    "changed",
    [
        lambda t: t.assign(y=[1, 2, 4]),  # one value
        lambda t: t.assign(y=t["y"].astype(float)),  # the same numbers as floats
        lambda t: t.rename(columns={"y": "z"}).assign(y=t["y"]),  # a column more
        lambda t: t[["y", "x"]],  # the columns' order
        lambda t: t.set_axis([5, 6, 7]),  # the index
        lambda t: t.iloc[:2],  # a row fewer
    ],
    ids=["value", "dtype", "column", "column order", "index", "rows"],
)
def test_any_change_in_a_table_builds_a_new_figure(changed) -> None:
    BUILT.clear()
    before = figures.drawn(bars, table())
    after = figures.drawn(bars, changed(table()))
    assert after is not before and len(BUILT) == 2


def test_other_arguments_or_another_builder_build_a_new_figure() -> None:
    BUILT.clear()
    first = figures.drawn(bars, table())
    assert figures.drawn(bars, table(), "jobs") is not first
    assert list(figures.drawn(columns, table()).data[0].x) == [1, 2, 3]
    assert len(BUILT) == 3
