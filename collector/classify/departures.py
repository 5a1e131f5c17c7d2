"""Where the classifier departs from the labelling procedure on purpose, as data
(`[[departure]]` in rules.toml), so that `ciflake classify --explain` can say, for a decision
one of them shaped, which step it departs from and why (docs/classifier.md, section 7)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from collector.classify.rules import DEFAULT_RULES_PATH

DOC = "docs/classifier.md, section 7"


@dataclass(frozen=True)
class Departure:
    name: str
    step: str  # the procedure's step it departs from
    reason: str  # one line: what ciflake does instead, and why
    line: re.Pattern[str] | None = None  # shaped the decision when a log line shows it
    verdict: re.Pattern[str] | None = None  # ... when the winner's verdict says it
    category: str | None = None  # ... when the decision is this category

    def shaped(self, category: str, verdict: str, lines: Iterable[str]) -> bool:
        if self.category is not None and category == self.category:
            return True
        if self.verdict is not None and self.verdict.search(verdict):
            return True
        return self.line is not None and any(self.line.search(line) for line in lines)


def parse_departures(text: str) -> tuple[Departure, ...]:
    """The `[[departure]]` tables of rules.toml text; raises ValueError on one that could never
    apply."""
    departures = []
    for raw in tomllib.loads(text).get("departure", []):
        line, verdict = raw.get("line"), raw.get("verdict")
        if line is None and verdict is None and raw.get("category") is None:
            raise ValueError(f"departure {raw['name']!r} needs a line, a verdict or a category")
        departures.append(
            Departure(
                name=raw["name"],
                step=str(raw["step"]),
                reason=raw["reason"],
                line=re.compile(line) if line else None,
                verdict=re.compile(verdict) if verdict else None,
                category=raw.get("category"),
            )
        )
    return tuple(departures)


@cache
def load_departures(path: Path = DEFAULT_RULES_PATH) -> tuple[Departure, ...]:
    return parse_departures(path.read_text(encoding="utf-8"))


def departures_shown(category: str, verdict: str, lines: Iterable[str]) -> list[Departure]:
    """The departures that shaped a decision of `category` won with `verdict`, over the log's
    `lines` (read once; an explanation, not the collector, pays for it)."""
    seen = list(lines)
    return [d for d in load_departures() if d.shaped(category, verdict, seen)]
