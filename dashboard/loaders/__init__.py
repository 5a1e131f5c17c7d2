"""Cached loaders: every number a page shows comes from here, computed by ``store``'s queries
(SQL) and ``analytics`` (pandas). ``shared``: the frames and settings every page reads; one
module per page for the rest.

The frames hold their strings in Arrow arrays (pandas 3's ``str`` dtype), so pyarrow's default
pool here is the C heap (``pyarrow.system_memory_pool``), not mimalloc: on the benchmark
machine mimalloc made a process's first allocations about three times as slow (a take over
eight 400,000-row string arrays: 1.0 s against 0.37 s, 0.47 s with MIMALLOC_ARENA_EAGER_COMMIT=0;
0.3 s for both once warm), and a page computed cold at 10x and 16x 10-20% slower.
``ciflake dashboard`` also sets ARROW_DEFAULT_MEMORY_POOL for Arrow's C++ side
(dashboard.launch); a value already set still chooses."""

import os

import pyarrow

if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())
