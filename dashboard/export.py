"""CSV bytes of a table as the dashboard shows it: ISO-8601 UTC times, lists joined by ";"."""

from __future__ import annotations

import pandas as pd


def csv_bytes(table: pd.DataFrame) -> bytes:
    out = table.copy()
    for column in out.columns:
        series = out[column]
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            out[column] = series.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        elif series.map(lambda v: isinstance(v, list | tuple)).any():
            out[column] = series.map(
                lambda v: ";".join(map(str, v)) if isinstance(v, list | tuple) else v
            )
    return out.to_csv(index=False).encode("utf-8")
