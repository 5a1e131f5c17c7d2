"""Multi-pattern matching over raw bytes: Hyperscan when importable, Python `re` otherwise.

Every pattern of every rule and fact is compiled once into one database; a scan of a block of
whole lines returns (pattern id, end offset) pairs and nothing else, so the per-byte work stays in
C and Python only touches the few lines that matched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

try:
    import hyperscan
except ImportError:  # pragma: no cover - exercised only where the wheel is unavailable
    hyperscan = None

Match = tuple[int, int]  # (pattern id, end offset in the block)


class Scanner:
    """Scans a block for all `patterns`; ids are the patterns' positions in the sequence.

    Patterns whose id is in `first_only` report only their first match per block, which saves
    a Python callback per line for patterns that only need one (environment facts).
    """

    def __init__(self, patterns: Sequence[str], first_only: frozenset[int] = frozenset()) -> None:
        self.backend = "hyperscan" if hyperscan is not None else "re"
        self._first_only = first_only
        if hyperscan is not None:
            single, multi = hyperscan.HS_FLAG_SINGLEMATCH, hyperscan.HS_FLAG_MULTILINE
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(
                expressions=[p.encode() for p in patterns],
                ids=list(range(len(patterns))),
                flags=[multi | (single if i in first_only else 0) for i in range(len(patterns))],
            )
        else:
            self._regexes = [re.compile(p.encode(), re.MULTILINE) for p in patterns]

    def scan(self, block: bytes) -> list[Match]:
        """All matches in `block`, in increasing end offset (a pattern may report a line twice)."""
        found: list[Match] = []
        if hyperscan is not None:
            self._db.scan(block, match_event_handler=_collector(found))
            return found
        for pid, regex in enumerate(self._regexes):
            matches = [regex.search(block)] if pid in self._first_only else regex.finditer(block)
            found.extend((pid, m.end()) for m in matches if m is not None)
        found.sort(key=lambda m: m[1])
        return found


def _collector(found: list[Match]):
    append = found.append

    def on_match(pid: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
        append((pid, end))

    return on_match
