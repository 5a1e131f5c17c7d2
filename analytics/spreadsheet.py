"""Tables made safe and plain for CSV: shared by ``ciflake export`` and the dashboard's
downloads, so a cell from a log can never run as a spreadsheet formula in either."""

from __future__ import annotations

import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # OWASP: tab and CR too


def for_spreadsheets(frame: pd.DataFrame) -> pd.DataFrame:
    """Times as ISO-8601 UTC text, list cells joined by ``;``, and text cells that a
    spreadsheet would run as a formula prefixed with ``'``."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if isinstance(values.dtype, pd.DatetimeTZDtype):
            out[column] = values.dt.tz_convert("UTC").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        elif values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            values = values.map(
                lambda v: ";".join(map(str, v)) if isinstance(v, list | tuple) else v
            )
            text = values.astype("string")
            risky = text.str.startswith(FORMULA_PREFIXES).fillna(False)
            out[column] = text.where(~risky, "'" + text)
    return out


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV with a header row."""
    return for_spreadsheets(frame).to_csv(index=False).encode("utf-8")
