"""What the collector loads only when it has work for it: ``analytics.derived`` and pandas.

A collect that stores nothing new never loads pandas. One that does loads it without pyarrow
when pandas is not in the process yet: pyarrow is the dashboard's (Streamlit's) dependency,
and pandas imports it whenever it is installed. Measured over SQLAlchemy and PyGithub (56 MB),
importing pandas took the process to 136 MB with pyarrow and 102 MB without; a collect with a
1 GB log peaks at 166 MB instead of 201 MB (``python -m bench.run collector``). Without it
pandas holds strings as NumPy objects (pandas 3: the ``str`` dtype's "python" storage,
https://pandas.pydata.org/docs/user_guide/text.html), the same values;
``tests/test_derived.py`` compares rows computed so with a computation that had pyarrow.
"""

from __future__ import annotations

import sys
from types import ModuleType


def derived() -> ModuleType:
    """``analytics.derived``, pandas loaded lean when this process has not loaded it yet."""
    if "pandas" not in sys.modules and "pyarrow" not in sys.modules:
        sys.modules["pyarrow"] = None  # type: ignore[assignment]  # import pyarrow: ImportError
    import analytics.derived

    return analytics.derived
