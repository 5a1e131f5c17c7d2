"""Stream a log once and keep, per rule, only its last accepted line (plus environment facts).

The file is read in chunks completed to the next line end, so memory stays flat whatever the
log's size; a line longer than MAX_CARRY is scanned in pieces. Context lines come from the chunk
being scanned and a small tail of the previous ones, so no second pass over the file is needed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import BinaryIO

from collector.classify.preprocess import clean_line
from collector.classify.rules import Rule, RuleSet
from collector.classify.scanner import Match, Scanner

CHUNK_BYTES = 4 << 20
MAX_CARRY = 8 << 20
CONTEXT_LINES = 5
CONTEXT_BYTES = 4096
LINE_WINDOW = 4096  # bytes kept either side of a match on a very long line


@dataclass(frozen=True)
class Hit:
    """A line a rule accepted: 1-based line number in the original log, cleaned text, context."""

    line_number: int | None  # None for a GitHub annotation, which is not a log line
    line: str
    context: tuple[str, ...]


@dataclass
class LogScan:
    """What one pass over a log found."""

    hits: dict[int, Hit] = field(default_factory=dict)  # rule index -> its last accepted line
    candidates: deque[Hit] = field(default_factory=deque)  # catch-all lines, oldest first
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Block:
    data: bytes
    lines_before: int
    offset: int
    prev_tail: bytes  # the last CONTEXT_BYTES of the log before this block

    def line_bounds(self, end: int) -> tuple[int, int]:
        start = self.data.rfind(b"\n", 0, end) + 1
        stop = self.data.find(b"\n", end)
        return start, len(self.data) if stop < 0 else stop

    def line_text(self, start: int, stop: int, end: int) -> str:
        return clean_line(self.data[max(start, end - LINE_WINDOW) : min(stop, end + LINE_WINDOW)])

    def hits(self, found: list[tuple[int, str]]) -> list[Hit]:
        """Hits for (line start, text) pairs; newlines are counted once across the block."""
        numbers: dict[int, int] = {}
        number, counted = self.lines_before + 1, 0
        for start in sorted({start for start, _ in found}):
            number += self.data.count(b"\n", counted, start)
            numbers[start], counted = number, start
        return [Hit(numbers[start], text, self._context(start)) for start, text in found]

    def _context(self, start: int) -> tuple[str, ...]:
        window = self.data[max(0, start - CONTEXT_BYTES) : start]
        if start < CONTEXT_BYTES:
            window = (self.prev_tail + window)[-CONTEXT_BYTES:]
        pieces = window.split(b"\n")[:-1]
        if self.offset + start > len(window):  # the window begins mid-line
            pieces = pieces[1:]
        return tuple(clean_line(p) for p in pieces[-CONTEXT_LINES:])


def _blocks(stream: BinaryIO) -> Iterator[_Block]:
    """Chunks of whole lines (a line longer than MAX_CARRY is cut), with running line counts."""
    lines, offset, tail = 0, 0, b""
    while block := stream.read(CHUNK_BYTES):
        if not block.endswith(b"\n"):
            block += stream.readline(MAX_CARRY)
        yield _Block(block, lines, offset, tail)
        lines += block.count(b"\n")
        offset += len(block)
        tail = (tail + block[-CONTEXT_BYTES:])[-CONTEXT_BYTES:]


class LogScanner:
    """One compiled scanner per rule set; `scan` is reentrant."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        patterns: list[str] = []
        self._owner: list[tuple[bool, int, int]] = []  # (is_fact, rule or fact index, pattern)
        for ri, rule in enumerate(ruleset.rules):
            for pi, p in enumerate(rule.patterns):
                patterns.append(p)
                self._owner.append((False, ri, pi))
        for fi, fact in enumerate(ruleset.facts):
            for pi, p in enumerate(fact.patterns):
                patterns.append(p)
                self._owner.append((True, fi, pi))
        facts = frozenset(i for i, (is_fact, _, _) in enumerate(self._owner) if is_fact)
        self.scanner = Scanner(patterns, first_only=facts)
        self._catch_all = len(ruleset.rules) - 1

    def scan(self, stream: BinaryIO, keep_candidates: int = 1) -> LogScan:
        """One pass; keeps the last `keep_candidates` catch-all lines (for green-log diffs)."""
        result = LogScan(candidates=deque(maxlen=keep_candidates))
        for block in _blocks(stream):
            matches = self.scanner.scan(block.data)
            if matches:
                self._take_facts(block, matches, result.env)
                self._take_rule_hits(block, matches, result, keep_candidates)
        return result

    def _take_facts(self, block: _Block, matches: list[Match], env: dict[str, str]) -> None:
        if len(env) == len(self.ruleset.facts):
            return
        for pid, end in matches:
            is_fact, fi, pi = self._owner[pid]
            fact = self.ruleset.facts[fi] if is_fact else None
            if fact is None or fact.name in env:
                continue
            found = fact.extractors[pi].search(block.line_text(*block.line_bounds(end), end))
            if found:
                env[fact.name] = found.group(1).strip()

    def _take_rule_hits(
        self, block: _Block, matches: list[Match], result: LogScan, keep_candidates: int
    ) -> None:
        """Walk matches backwards: the first acceptable line per rule is its last in the block."""
        done: set[int] = set()
        seen: set[tuple[int, int]] = set()
        accepted: list[tuple[int, int, str]] = []  # (rule index, line start, text), last first
        candidates = 0
        for pid, end in reversed(matches):
            is_fact, ri, _ = self._owner[pid]
            if is_fact or ri in done:
                continue
            start, stop = block.line_bounds(end)
            if (ri, start) in seen:
                continue
            seen.add((ri, start))
            text = block.line_text(start, stop, end)
            if not self._accepts(self.ruleset.rules[ri], text):
                continue
            accepted.append((ri, start, text))
            candidates += ri == self._catch_all
            if ri != self._catch_all or candidates >= keep_candidates:
                done.add(ri)
        hits = block.hits([(start, text) for _, start, text in accepted])
        for (ri, _, _), hit in zip(reversed(accepted), reversed(hits), strict=True):
            if ri == self._catch_all:
                result.candidates.append(hit)
            else:
                result.hits[ri] = hit

    def _accepts(self, rule: Rule, text: str) -> bool:
        return bool(text) and not self.ruleset.is_boilerplate(text) and not rule.excludes(text)


@cache
def log_scanner(ruleset: RuleSet) -> LogScanner:
    """The compiled scanner for `ruleset`, built once (compiling Hyperscan takes ~100 ms)."""
    return LogScanner(ruleset)
