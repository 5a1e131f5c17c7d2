"""Peak memory of a benchmark's child interpreter.

A child started by fork and exec inherits the parent's high-water mark in ``ru_maxrss``:
Linux keeps the old image's peak across exec (``setmax_mm_hiwater_rss`` in ``exec_mmap``), so a
big benchmark process makes every child look big. ``VmHWM`` in ``/proc/self/status`` is the
new image's own peak."""

PEAK_KB = (
    "def peak_kb():\n"
    "    import resource\n"
    "    try:\n"
    "        with open('/proc/self/status') as status:\n"
    "            return next(int(x.split()[1]) for x in status if x.startswith('VmHWM:'))\n"
    "    except (OSError, StopIteration):\n"
    "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
)
