"""Multi-pattern matching over raw bytes: Hyperscan when importable, Python `re` otherwise.

Every pattern of every rule and fact is compiled once into one database; a scan of a block of
whole lines returns (pattern id, end offset) pairs and nothing else, so the per-byte work stays in
C and Python only touches the few lines that matched.

Compiling the database takes about 100 ms, most of a short `ciflake classify`; so the compiled
database is kept in the user's cache directory ($XDG_CACHE_HOME/ciflake, else ~/.cache/ciflake),
keyed by the patterns, their flags and the Hyperscan version. A cache that cannot be read or
written, is damaged or was built for another CPU is silently replaced by compiling.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

try:
    import hyperscan
except ImportError:  # pragma: no cover - exercised only where the wheel is unavailable
    hyperscan = None

Match = tuple[int, int]  # (pattern id, end offset in the block)
CACHE_SUBDIR = "ciflake"
STALE_SECONDS = 30 * 86400  # a cached database of rules not loaded for 30 days is dropped
_DIGEST = hashlib.sha256().digest_size


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
            expressions = [p.encode() for p in patterns]
            flags = [multi | (single if i in first_only else 0) for i in range(len(patterns))]
            self._db = _database(expressions, flags)
        else:
            self._regexes = [re.compile(p.encode(), re.MULTILINE) for p in patterns]

    def scan(self, block: bytes) -> list[Match]:
        """All matches in `block`, in increasing end offset (a pattern may report a line twice)."""
        found: list[Match] = []
        if hyperscan is not None:
            self._db.scan(block, match_event_handler=_collector(found))
            found.sort(key=lambda m: m[1])  # several patterns may report out of order
            return found
        for pid, regex in enumerate(self._regexes):
            matches = [regex.search(block)] if pid in self._first_only else regex.finditer(block)
            found.extend((pid, m.end()) for m in matches if m is not None)
        found.sort(key=lambda m: m[1])
        return found


def refusal(pattern: str) -> str | None:
    """Why Hyperscan cannot compile `pattern` (a maintainer's own rule, which Python's re has
    read already), else None."""
    if hyperscan is None:  # pragma: no cover - the scanner is Python's re then
        return None
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=[pattern.encode()], flags=[hyperscan.HS_FLAG_MULTILINE])
    except hyperscan.error as exc:
        return f"the log scanner (Hyperscan) cannot use {pattern!r}: {exc}"
    return None


def _collector(found: list[Match]):
    append = found.append

    def on_match(pid: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
        append((pid, end))

    return on_match


def cache_dir() -> Path | None:
    """Where compiled databases are kept; None when there is no home directory to use."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    except RuntimeError:  # no $HOME and no password entry
        return None
    return root / CACHE_SUBDIR


def cache_path(expressions: Sequence[bytes], flags: Sequence[int]) -> Path | None:
    """The cache file of the database for `expressions` and `flags` (None: no cache)."""
    directory = cache_dir()
    if directory is None:
        return None
    key = hashlib.sha256(repr((hyperscan.__version__, list(expressions), list(flags))).encode())
    return directory / f"hyperscan-{key.hexdigest()[:40]}.db"


def _database(expressions: list[bytes], flags: list[int]):
    path = cache_path(expressions, flags)
    database = _load(path) if path is not None else None
    if database is None:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
        if path is not None:
            _store(path, database)
    return database


def _load(path: Path):
    """The database cached at `path`, or None if it is missing, damaged or unusable here."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    digest, payload = raw[:_DIGEST], raw[_DIGEST:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        database = hyperscan.loadb(payload, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)  # loadb leaves none
        database.scan(b"probe\n", match_event_handler=_collector([]))  # another CPU fails here
    except hyperscan.error:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # in use: not stale
    return database


def _store(path: Path, database) -> None:
    """Write `database` to `path` atomically, and drop databases of rules unused for a while."""
    payload = hyperscan.dumpb(database)
    with contextlib.suppress(OSError):
        stale = time.time() - STALE_SECONDS
        for old in path.parent.glob("hyperscan-*.db"):
            if old != path and old.stat().st_mtime < stale:
                old.unlink()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(hashlib.sha256(payload).digest() + payload)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
