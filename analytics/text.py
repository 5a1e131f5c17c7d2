"""Text cells built from columns, safe on thin data: the one place for pandas 3's dtype traps.

An empty or all-missing column keeps a numeric dtype where a full one holds text: ``.map`` of a
format on an empty float column stays float64 (adding text to it fails), ``fillna`` of a
string on a float column is refused by the next pandas, and ``.str`` on an empty float column
raises. Every label a table, a page or the summary builds from columns goes through these, so
a first night's, a single run's or an empty window's frame gives text (or no rows) as a full
one does.
"""

from __future__ import annotations

import pandas as pd


def formatted(values: pd.Series, spec: str, missing: str | None = None) -> pd.Series:
    """Each value through ``spec`` (``"{:.2f}"``) as text; an empty column stays text.
    ``missing``: the text of a missing value (None: it goes through ``spec`` too, "nan")."""
    if missing is None:
        return values.map(spec.format).astype(str)
    return values.map(spec.format, na_action="ignore").astype(str).fillna(missing)


def filled(values: pd.Series, fill: str) -> pd.Series:
    """``values`` as text cells, missing ones ``fill``; numbers become their ``str``."""
    return values.astype(object).where(values.notna(), fill).astype(str)


def basename(paths: pd.Series) -> pd.Series:
    """The part after the last ``/`` of each path (a workflow file's name); missing stays
    missing, an empty or all-missing column gives text."""
    return paths.astype(object).astype(str).str.rsplit("/", n=1).str[-1]
