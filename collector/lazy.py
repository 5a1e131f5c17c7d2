"""What the collector loads only when it has work for it, and how a collect-only process keeps
pandas lean.

A collect that stores nothing new never loads pandas (``derived``). A process that only
collects (``ciflake collect``, ``ciflake schedule``) also calls ``lean_pandas`` first, so that
pandas, once loaded, leaves pyarrow out: pyarrow is the dashboard's (Streamlit's) dependency,
and pandas imports it whenever it is installed. Measured over SQLAlchemy and PyGithub (56 MB),
importing pandas took the process to 136 MB with pyarrow and 102 MB without; a collect with a
1 GB log peaks at 166 MB instead of 201 MB (``python -m bench.run collector``). Without it
pandas holds strings as NumPy objects (pandas 3: the ``str`` dtype's "python" storage,
https://pandas.pydata.org/docs/user_guide/text.html), the same values;
``tests/test_derived.py`` compares rows computed so with a computation that had pyarrow.

Only the command decides: a library caller (the demo, a test, a notebook) collects in a
process that may draw a dashboard later, and keeps pyarrow importable.
"""

from __future__ import annotations

import sys
from types import ModuleType


def lean_pandas() -> None:
    """Make ``import pyarrow`` fail in this process, unless pandas or pyarrow is loaded
    already (then it changes nothing)."""
    if "pandas" not in sys.modules and "pyarrow" not in sys.modules:
        sys.modules["pyarrow"] = None  # type: ignore[assignment]  # import pyarrow: ImportError


def derived() -> ModuleType:
    """``analytics.derived``, imported (with pandas) only when a collect has rows to derive."""
    import analytics.derived

    return analytics.derived
