"""Stream a log once and keep, per rule, only its last accepted line (plus environment facts).

The file is read in chunks completed to the next line end, so memory stays flat whatever the
log's size; a line longer than MAX_CARRY is scanned in pieces. Context lines come from the chunk
being scanned and a small tail of the previous ones, so no second pass over the file is needed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import BinaryIO

from collector.classify.pattern_matcher import Match, Scanner
from collector.classify.preprocess import clean_line, text_starts
from collector.classify.rules import Rule, RuleSet

CHUNK_BYTES = 4 << 20
MAX_CARRY = 8 << 20
CONTEXT_LINES = 5
CONTEXT_BYTES = 4096
LINE_WINDOW = 4096  # bytes kept either side of a match on a very long line
STRONG, WEAK = "strong", "weak"
_LOGICAL_LINE = re.compile(rb"\n|\\n")  # a line end, or a JSON-escaped one inside a line


@dataclass(frozen=True)
class Hit:
    """A line a rule accepted: 1-based line number in the original log, cleaned text, and the
    raw lines above it (cleaned only when asked for: most hits never win)."""

    line_number: int | None  # None for a GitHub annotation, which is not a log line
    line: str
    raw_context: tuple[bytes, ...] = ()

    @cached_property
    def context(self) -> tuple[str, ...]:
        return tuple(clean_line(raw) for raw in self.raw_context)


@dataclass
class LogScan:
    """What one pass over a log found.

    A rule's line is strong evidence unless the rule matched only in a lower-level part of it
    (a WARNING or INFO line, a retry): such a line is weak, and decides only when nothing
    strong does. A match inside advice ("There are some potential root causes...") is none.
    """

    hits: dict[int, Hit] = field(default_factory=dict)  # rule index -> its last strong line
    weak: dict[int, Hit] = field(default_factory=dict)  # rule index -> its last weak line
    first: dict[int, Hit] = field(default_factory=dict)  # rule index -> its first strong line
    candidates: deque[Hit] = field(default_factory=deque)  # catch-all lines, oldest first
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Block:
    data: bytes
    lines_before: int
    offset: int
    prev_tail: bytes  # the last CONTEXT_BYTES of the log before this block
    # (offset, newlines before it) counted so far: hits() and newlines() share one count
    counted: list[int] = field(default_factory=lambda: [0, 0], compare=False, repr=False)

    def line_bounds(self, end: int) -> tuple[int, int]:
        """The line around offset `end`: a physical line, or the logical line inside it where
        a JSON-escaped `\\n` or a carriage return (progress bars) splits it."""
        start = self.data.rfind(b"\n", 0, end) + 1
        stop = self.data.find(b"\n", end)
        stop = len(self.data) if stop < 0 else stop
        if self.data.find(b"\\n", start, stop) >= 0 or self.data.find(b"\r", start, stop - 1) >= 0:
            inner = end - 1 if end > start else end
            for mark in (b"\\n", b"\r"):
                cut = self.data.rfind(mark, start, inner)
                start = start if cut < 0 else cut + len(mark)
                cut = self.data.find(mark, inner, stop)
                stop = stop if cut < 0 else cut
        return start, stop

    def line_text(self, start: int, stop: int, end: int) -> str:
        return clean_line(self.data[max(start, end - LINE_WINDOW) : min(stop, end + LINE_WINDOW)])

    def hits(self, found: list[tuple[int, str]]) -> list[Hit]:
        """Hits for (line start, text) pairs; newlines are counted once across the block."""
        numbers: dict[int, int] = {}
        counted, newlines = self.counted
        for start in sorted({start for start, _ in found}):
            if start < counted:  # a second call for earlier lines: count again from 0
                counted, newlines = 0, 0
            newlines += self.data.count(b"\n", counted, start)
            numbers[start], counted = self.lines_before + 1 + newlines, start
        self.counted[:] = counted, newlines
        return [Hit(numbers[start], text, self._context(start)) for start, text in found]

    def newlines(self) -> int:
        """The block's newlines, counting only what hits() has not counted yet."""
        counted, newlines = self.counted
        return newlines + self.data.count(b"\n", counted)

    def _context(self, start: int) -> tuple[bytes, ...]:
        window = self.data[max(0, start - CONTEXT_BYTES) : start]
        if start < CONTEXT_BYTES:
            window = (self.prev_tail + window)[-CONTEXT_BYTES:]
        pieces = _LOGICAL_LINE.split(window)[:-1]
        if self.offset + start > len(window):  # the window begins mid-line
            pieces = pieces[1:]
        return tuple(pieces[-CONTEXT_LINES:])


def _blocks(stream: BinaryIO) -> Iterator[_Block]:
    """Chunks of whole lines (a line longer than MAX_CARRY is cut), with running line counts."""
    lines, offset, tail = 0, 0, b""
    while block := stream.read(CHUNK_BYTES):
        if not block.endswith(b"\n"):
            block += stream.readline(MAX_CARRY)
        item = _Block(block, lines, offset, tail)
        yield item
        lines += item.newlines()
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
        """Per rule, its last strong and last weak line of the block (walking backwards), and
        its first strong line if no earlier block had one (walking forwards)."""
        ends: dict[int, list[tuple[int, int]]] = {}  # rule index -> (end, pattern index)
        for pid, end in matches:
            is_fact, ri, pi = self._owner[pid]
            if not is_fact:
                ends.setdefault(ri, []).append((end, pi))
        found: list[tuple[str, int, int, str]] = []  # (slot, rule index, line start, text)
        for ri, rule_ends in ends.items():
            lines = self._rule_lines(block, ri, rule_ends, ri in result.first, keep_candidates)
            found.extend(lines)
        hits = block.hits([(start, text) for _, _, start, text in found])
        for (slot, ri, _, _), hit in sorted(zip(found, hits, strict=True), key=lambda f: f[0][2]):
            if slot == "candidate":
                result.candidates.append(hit)
            elif slot == "first":
                result.first.setdefault(ri, hit)
            else:
                (result.hits if slot == "strong" else result.weak)[ri] = hit

    def _rule_lines(
        self,
        block: _Block,
        ri: int,
        ends: list[tuple[int, int]],
        has_first: bool,
        keep_candidates: int,
    ) -> Iterator[tuple[str, int, int, str]]:
        rule = self.ruleset.rules[ri]
        judged: dict[int, tuple[str | None, str]] = {}  # line start -> (strength, text)

        def judge(match: tuple[int, int]) -> tuple[int, str | None, str]:
            end, pattern = match
            start, stop = block.line_bounds(end)
            if start not in judged:
                text = block.line_text(start, stop, end)
                raw = block.data[max(start, end - LINE_WINDOW) : min(stop, end + LINE_WINDOW)]
                judged[start] = (self._strength(rule, pattern, text, raw), text)
            return start, *judged[start]

        if ri == self._catch_all:
            taken: set[int] = set()
            for match in reversed(ends):
                start, strength, text = judge(match)
                if strength == STRONG and start not in taken:
                    taken.add(start)
                    yield "candidate", ri, start, text
                    if len(taken) >= keep_candidates:
                        return
            return
        weak = False
        for match in reversed(ends):
            start, strength, text = judge(match)
            if strength == WEAK and not weak:
                weak = True
                yield "weak", ri, start, text
            elif strength == STRONG:
                yield "strong", ri, start, text
                break
        else:
            return  # no strong line in this block: no first one either
        if not has_first:
            for match in ends:
                start, strength, text = judge(match)
                if strength == STRONG:
                    yield "first", ri, start, text
                    return

    def _strength(self, rule: Rule, pattern: int, text: str, raw: bytes) -> str | None:
        """STRONG; WEAK when the rule matched only in a lower-level part of the line (WARNING,
        INFO, a retry); None when only in advice, when the line is no evidence at all, or when
        the match ran on from another line of a JSON-escaped or carriage-return line."""
        if not text or rule.excludes(text):
            return None
        # a header ("ERROR: Exception:") only announces the error on the lines after it; only
        # the catch-all's patterns ("ERROR", "Exception") can match one
        if rule is self.ruleset.catch_all and self.ruleset.is_header(text):
            return None
        # a last-resort rule reads how a job ended ("exit code 124"), which is boilerplate to
        # every other rule
        if rule.role != "last_resort" and self.ruleset.is_boilerplate(text):
            return None
        start = _match_start(rule, pattern, text, raw)
        if start is None:
            return None
        advice, weak = text_starts(text, self.ruleset.advice, self.ruleset.weak)
        if start >= min(advice, weak):  # another of the rule's patterns may match earlier
            earliest = rule.first_match(text)
            start = start if earliest is None else min(start, earliest)
        if start >= advice:
            return None
        if start >= weak:
            return None if rule is self.ruleset.catch_all else WEAK
        return STRONG


def _match_start(rule: Rule, pattern: int, text: str, raw: bytes) -> int | None:
    """Where the rule's `pattern` starts in the cleaned line; 0 when only the raw line shows it
    (a pattern that reads GitHub's `##[error]` marker); None when this line does not hold it."""
    found = rule.matchers[pattern].search(text)
    if found is not None:
        return found.start()
    if rule.matchers[pattern].search(raw.decode("utf-8", errors="replace")):
        return 0
    return rule.first_match(text)


@cache
def log_scanner(ruleset: RuleSet) -> LogScanner:
    """The compiled scanner for `ruleset`, built once (compiling Hyperscan takes ~100 ms)."""
    return LogScanner(ruleset)
