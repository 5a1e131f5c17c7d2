"""A chart's figure built once for the same inputs: a rerun of a page (a click back to it, a
filter already seen) gets its tables from the cache (dashboard.loaders.shared.table), and
then its figures from here instead of building them again, which took the Overview 0.1 s
of CPU for its stability timeline alone. Keyed on the inputs' every value, so a figure is
never older than the tables it is drawn from."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

FIGURES = 64  # figures kept: a few per page, for a few filters and periods


def drawn(builder: Callable[..., go.Figure], *args: Any) -> go.Figure:
    """``builder(*args)`` (a figure builder of dashboard.charts), built once for arguments of
    the same value: a DataFrame by its columns, dtypes, index and every row, anything else by
    its repr. The figure is shared by every rerun and session, so nobody may change it
    (st.plotly_chart copies it)."""
    return _built(builder.__qualname__, _digest(args), builder, args)


def _digest(args: tuple[Any, ...]) -> str:
    """A digest of ``args``' values (pandas' row hashes for a DataFrame): a few ms for the
    Overview's tables, against the tenth of a second its figures take."""
    digest = hashlib.blake2b(digest_size=16)
    for arg in args:
        if isinstance(arg, pd.DataFrame):
            digest.update(pd.util.hash_pandas_object(arg.dtypes).to_numpy().tobytes())
            digest.update(pd.util.hash_pandas_object(arg).to_numpy().tobytes())
        else:
            digest.update(repr(arg).encode())
        digest.update(b"\0")
    return digest.hexdigest()


@st.cache_resource(max_entries=FIGURES, ttl="1h", show_spinner=False)
def _built(
    name: str, digest: str, _builder: Callable[..., go.Figure], _args: tuple[Any, ...]
) -> go.Figure:
    """``name`` and ``digest``: the key (Streamlit hashes no argument named with a leading
    underscore); a resource cache, so a hit is the figure itself, not a copy to validate."""
    return _builder(*_args)
