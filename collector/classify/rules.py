"""Load and validate rules.toml, so that a bad rule fails at load time, not mid-collection."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from store.vocabulary import CATEGORIES

DEFAULT_RULES_PATH = Path(__file__).with_name("rules.toml")
CATCH_ALL_CATEGORY = "unknown"


@dataclass(frozen=True)
class Rule:
    """One ordered rule; `patterns` are scanned by Hyperscan, the rest is Python `re`."""

    name: str
    category: str
    patterns: tuple[str, ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    failed_step: re.Pattern[str] | None = None
    job_name: re.Pattern[str] | None = None
    no_jobs: bool = False

    @property
    def has_conditions(self) -> bool:
        return self.failed_step is not None or self.job_name is not None or self.no_jobs

    def conditions_hold(self, job_name: str | None, failed_steps: tuple[str, ...], no_jobs: bool):
        """True when every job-level condition of this rule is satisfied (vacuously if none)."""
        if self.no_jobs and not no_jobs:
            return False
        if self.job_name is not None and not (job_name and self.job_name.search(job_name)):
            return False
        return self.failed_step is None or any(self.failed_step.search(s) for s in failed_steps)

    def excludes(self, line: str) -> bool:
        return any(p.search(line) for p in self.exclude)


@dataclass(frozen=True)
class Fact:
    """An environment fact (torch version, GPU model...); group 1 of a matching pattern is it."""

    name: str
    patterns: tuple[str, ...]
    extractors: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class RuleSet:
    version: str
    rules: tuple[Rule, ...]
    facts: tuple[Fact, ...]
    boilerplate: tuple[re.Pattern[str], ...]

    @property
    def catch_all(self) -> Rule:
        return self.rules[-1]

    def is_boilerplate(self, line: str) -> bool:
        return any(p.search(line) for p in self.boilerplate)


def _compile_all(patterns: list[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


def _parse_rule(raw: dict) -> Rule:
    name = raw["name"]
    if raw["category"] not in CATEGORIES:
        raise ValueError(f"rule {name!r}: unknown category {raw['category']!r}")
    rule = Rule(
        name=name,
        category=raw["category"],
        patterns=tuple(raw.get("patterns", ())),
        exclude=_compile_all(raw.get("exclude", [])),
        failed_step=re.compile(raw["failed_step"]) if "failed_step" in raw else None,
        job_name=re.compile(raw["job_name"]) if "job_name" in raw else None,
        no_jobs=bool(raw.get("no_jobs", False)),
    )
    if not rule.patterns and not rule.has_conditions:
        raise ValueError(f"rule {name!r} has neither patterns nor job conditions")
    return rule


def parse_rules(text: str) -> RuleSet:
    """Parse rules.toml text; raises ValueError on a rule the engine could not apply."""
    data = tomllib.loads(text)
    rules = tuple(_parse_rule(r) for r in data["rule"])
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError("rule names must be unique")
    unknown = [r.name for r in rules if r.category == CATCH_ALL_CATEGORY]
    if unknown != [rules[-1].name] or not rules[-1].patterns:
        raise ValueError("exactly one catch-all rule (category 'unknown', with patterns), last")
    facts = tuple(
        Fact(f["name"], tuple(f["patterns"]), _compile_all(f["patterns"]))
        for f in data.get("fact", [])
    )
    return RuleSet(str(data["version"]), rules, facts, _compile_all(data.get("boilerplate", [])))


@cache
def _load_cached(path: Path) -> RuleSet:
    return parse_rules(path.read_text(encoding="utf-8"))


def load_rules(path: str | Path | None = None) -> RuleSet:
    """The rule set at `path` (default: the packaged rules.toml), parsed once per path."""
    return _load_cached(Path(path) if path else DEFAULT_RULES_PATH)


RULES_VERSION: str = load_rules().version
