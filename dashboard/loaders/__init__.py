"""Cached loaders: every number a page shows comes from here, computed by ``store``'s queries
(SQL) and ``analytics`` (pandas). ``shared``: the frames and settings every page reads; one
module per page for the rest.

The frames hold their strings in Arrow arrays (pandas 3's ``str`` dtype), so the dashboard's
process takes Arrow memory from the C heap (``pyarrow.system_memory_pool``) rather than
pyarrow's default, mimalloc: mimalloc commits its arenas eagerly, which made a process's first
allocations about three times as slow here (a take over eight 400,000-row string arrays: 1.0 s
against 0.37 s; 0.3 s for both once warm), and a page computed cold at 10x and 16x 10-20%
slower. ARROW_DEFAULT_MEMORY_POOL, when set, still chooses."""

import os

import pyarrow

if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())
