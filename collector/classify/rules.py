"""Load and validate rules.toml and tables.toml, so that a bad rule fails at load time.

rules.toml holds the ordered rules; tables.toml holds the families of messages that are data
rather than sentences (exception classes, errno numbers, vendor error codes), each row adding
patterns to the rule it names.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from collector.classify.pattern_matcher import refusal
from collector.classify.preprocess import strip_prefixes
from store.project import RuleTable
from store.vocabulary import CATEGORIES

DEFAULT_RULES_PATH = Path(__file__).with_name("rules.toml")
TABLES_NAME = "tables.toml"
CATCH_ALL_CATEGORY = "unknown"
# How a rule's line takes part in the search for the root cause (engine.decide):
# - cause: a concrete error;
# - consequence: what follows an error elsewhere (a collective timeout on a waiting rank, a dead
#   actor, a child process that failed); it yields to any cause seen earlier in the log;
# - generic: a wrapper code that names no cause of its own ("ERR00100 PTA call acl api
#   failed", "EZ9999 Inner Error"); it keeps its place in the order, but is never the earlier
#   cause a consequence yields to;
# - last_resort: how a job ended ("exit code 124"); it decides only when nothing else does;
# - qualifier: evidence that changes what another rule's win means (a SIGKILL the log shows was
#   not memory); it never wins alone, only in the place of a rule it `qualifies`.
ROLES = ("cause", "consequence", "generic", "last_resort", "qualifier")
# The keys a rule may have, with their types (a list holds strings): rules.toml's and the
# maintainers' own [[rules]] in ciflake.toml are read by the same schema.
RULE_KEYS: dict[str, type] = {
    "name": str,
    "category": str,
    "patterns": list,
    "exclude": list,
    "failed_step": str,
    "job_name": str,
    "no_jobs": bool,
    "time_limit": bool,
    "role": str,
    "carries": str,
    "stands_for": str,
    "raised_in": str,
    "qualifies": list,
}
CONDITION_KEYS = ("failed_step", "job_name", "no_jobs", "time_limit")


class RuleError(ValueError):
    """A rule the engine could not apply, in one line that names the rule and the key."""


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
    # the job, or its failed step, ran its whole `timeout-minutes` (collector.time_limits)
    time_limit: bool = False
    role: str = "cause"
    # Group 1 is the error this line carries ("FAILED t.py::x - KeyError: 'a'"): it is
    # classified in the wrapper's place.
    carries: re.Pattern[str] | None = None
    # The carried errors no rule knows that the wrapper stands for itself (a test's own
    # "assert ..."); any other is passed over. None: it stands for every error no rule knows.
    stands_for: re.Pattern[str] | None = None
    # When the line's traceback shows the frame that raised it, the frame's file must match.
    raised_in: re.Pattern[str] | None = None
    # A qualifier's rules: when one of them wins and this rule's evidence is there, it wins.
    qualifies: tuple[str, ...] = ()
    matchers: tuple[re.Pattern[str], ...] = ()  # `patterns` in Python re, to locate a match
    # Where a maintainer's own rule is written ("ciflake.toml: [[rules]] #1"); "" if built in.
    origin: str = ""

    @property
    def has_conditions(self) -> bool:
        conditions = (self.failed_step, self.job_name)
        return any(c is not None for c in conditions) or self.no_jobs or self.time_limit

    def conditions_hold(
        self,
        job_name: str | None,
        failed_steps: tuple[str, ...],
        no_jobs: bool,
        time_limit: bool = False,
    ) -> bool:
        """True when every job-level condition of this rule is satisfied (vacuously if none)."""
        if (self.no_jobs and not no_jobs) or (self.time_limit and not time_limit):
            return False
        if self.job_name is not None and not (job_name and self.job_name.search(job_name)):
            return False
        return self.failed_step is None or any(self.failed_step.search(s) for s in failed_steps)

    def excludes(self, line: str) -> bool:
        return any(p.search(line) for p in self.exclude)

    def first_match(self, text: str) -> int | None:
        """Where the leftmost match of any pattern starts in `text` (None: none matches)."""
        starts = [found.start() for p in self.matchers if (found := p.search(text))]
        return min(starts) if starts else None


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
    weak: re.Pattern[str] | None = None  # where a lower log level begins in a line
    advice: re.Pattern[str] | None = None  # where advice begins: never evidence
    # a line that only announces an error whose text follows ("ERROR: Exception:"): none
    headers: re.Pattern[str] | None = None

    @property
    def catch_all(self) -> Rule:
        return self.rules[-1]

    def is_boilerplate(self, line: str) -> bool:
        return any(p.search(line) for p in self.boilerplate)

    def is_header(self, line: str) -> bool:
        """True when the line, without its prefixes, is a header and nothing else."""
        return self.headers is not None and self.headers.fullmatch(strip_prefixes(line)) is not None

    def rule_for_text(self, text: str) -> int | None:
        """The index of the first rule with patterns that `text` alone satisfies."""
        for index, rule in enumerate(self.rules):
            if rule.role == "qualifier":
                continue  # never stands alone
            if rule.matchers and rule.first_match(text) is not None and not rule.excludes(text):
                return index
        return None


def _compile_all(patterns: list[str], key: str = "patterns") -> tuple[re.Pattern[str], ...]:
    return tuple(_compiled(p, key) for p in patterns)


def _compiled(pattern: str, key: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RuleError(f"key {key!r}: bad regex {pattern!r}: {exc}") from None


def _any_of(patterns: list[str]) -> re.Pattern[str] | None:
    """One regex for a list: its leftmost match is the leftmost of any of them."""
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _optional(raw: dict, key: str) -> re.Pattern[str] | None:
    return _compiled(raw[key], key) if key in raw else None


def _check_schema(raw: dict[str, Any]) -> None:
    """Known keys of the right types, a name and a known category and role."""
    for key, value in raw.items():
        if key not in RULE_KEYS:
            raise RuleError(f"key {key!r}: not a rule's key (known: {', '.join(RULE_KEYS)})")
        wanted = RULE_KEYS[key]
        strings = not isinstance(value, list) or all(isinstance(item, str) for item in value)
        if not isinstance(value, wanted) or not strings:
            shape = "a list of strings" if wanted is list else wanted.__name__
            raise RuleError(f"key {key!r}: must be {shape}, got {value!r}")
    for key in ("name", "category"):
        if key not in raw:
            raise RuleError(f"key {key!r}: missing")
    if raw["category"] not in CATEGORIES:
        known = ", ".join(CATEGORIES)
        raise RuleError(f"key 'category': unknown category {raw['category']!r} (known: {known})")
    if raw.get("role", "cause") not in ROLES:
        raise RuleError(f"key 'role': must be one of {', '.join(ROLES)}")


def _parse_rule(raw: dict[str, Any], extra: list[str], origin: str = "") -> Rule:
    """One rule of rules.toml or of a maintainer's [[rules]]; RuleError names the key at fault
    (the caller names the rule)."""
    _check_schema(raw)
    role = raw.get("role", "cause")
    patterns = (*raw.get("patterns", ()), *extra)
    rule = Rule(
        name=raw["name"],
        category=raw["category"],
        patterns=patterns,
        exclude=_compile_all(raw.get("exclude", []), "exclude"),
        failed_step=_optional(raw, "failed_step"),
        job_name=_optional(raw, "job_name"),
        no_jobs=raw.get("no_jobs", False),
        time_limit=raw.get("time_limit", False),
        role=role,
        carries=_optional(raw, "carries"),
        stands_for=_optional(raw, "stands_for"),
        raised_in=_optional(raw, "raised_in"),
        qualifies=tuple(raw.get("qualifies", ())),
        matchers=_compile_all(list(patterns)),
        origin=origin,
    )
    if not rule.patterns and not rule.has_conditions:
        conditions = ", ".join(CONDITION_KEYS)
        raise RuleError(f"key 'patterns': missing, and neither patterns nor any of {conditions}")
    if (role == "qualifier") != bool(rule.qualifies):
        raise RuleError("key 'qualifies': a qualifier, and only a qualifier, names `qualifies`")
    if rule.stands_for is not None and rule.carries is None:
        raise RuleError("key 'stands_for': `stands_for` needs `carries`")
    return rule


def _check_qualifies(rule: Rule, names: set[str]) -> None:
    if unknown := [q for q in rule.qualifies if q not in names]:
        raise RuleError(f"key 'qualifies': {rule.name!r} qualifies unknown rules {unknown}")


_META = re.compile(r"([.^$*+?{}\[\]\\|()])")


def _escape(text: str) -> str:
    """`text` as a literal pattern in the subset all three engines read alike (re.escape would
    escape spaces, which grep -E warns about)."""
    return _META.sub(r"\\\1", text)


def _capitalised_either(text: str) -> str:
    """`text` as a pattern whose first letter may be upper or lower case."""
    head, rest = text[0], _escape(text[1:])
    return f"[{head.upper()}{head.lower()}]{rest}" if head.isalpha() else _escape(text)


# Each table row becomes patterns of the rule it names. A name stands whole: after a non-word
# character, at a line start, after a JSON-escaped "\n" or after an ANSI colour ("...[0m").
# The classes exclude the line end itself, or a name at the end of one line would be reported
# on the next.
_START = r"(^|[^A-Za-z0-9_\n]|\\n|\[[0-9;]*m)"
_END = r"([^A-Za-z0-9_\n]|$)"
# The words a numeric vendor code follows: "error code is 507014", "ret = 207001", and the
# camel-case forms of Ascend's samples ("errorCode = 507033").
_CODE_WORDS = "code|result|ret|error|failed|errorCode|error_code|retCode"


def _table_patterns(row: dict, kind: str) -> list[str]:
    if kind == "exception":  # "torch.OutOfMemoryError: ...", "raise TimeoutError"
        named = [f"{_START}{_escape(n)}{_END}" for n in row.get("names", ())]
        # a bare class only where nothing qualifies or wraps it: RayTaskError(X) carries "X"
        bare = [rf"(^|[ :']|\\n){_escape(n)}{_END}" for n in row.get("bare", ())]
        return named + bare
    if kind == "errno":
        number, name = row["number"], row["name"]
        return [rf"\[Errno {number}\]", rf"\b{name}\b", _capitalised_either(row["message"])]
    if kind == "code":  # vendor codes: E[A-Z]nnnn names, or numbers after a "code"-like word
        named = [f"{_START}{c}{_END}" for c in row.get("codes", ())]
        numbered = [rf"\b({_CODE_WORDS})\b[ :=]{{0,3}}(is )?{n}\b" for n in row.get("numbers", ())]
        return named + numbered
    raise ValueError(f"unknown table {kind!r}")


TABLE_KINDS = ("exception", "errno", "code")


def _tables(text: str, names: set[str]) -> dict[str, list[str]]:
    """rule name -> the patterns its table rows add."""
    extra: dict[str, list[str]] = {}
    data = tomllib.loads(text)
    for kind in TABLE_KINDS:
        for row in data.get(kind, []):
            if row["rule"] not in names:
                raise ValueError(f"{kind} table row names an unknown rule {row['rule']!r}")
            extra.setdefault(row["rule"], []).extend(_table_patterns(row, kind))
    return extra


def parse_rules(text: str, tables: str = "") -> RuleSet:
    """Parse rules.toml (and tables.toml) text; raises ValueError on a rule the engine could
    not apply."""
    data = tomllib.loads(text)
    names = [r.get("name") for r in data["rule"]]
    if len(set(names)) != len(names):
        raise ValueError("rule names must be unique")
    extra = _tables(tables, {str(name) for name in names}) if tables else {}
    rules = []
    for number, raw in enumerate(data["rule"], 1):
        try:
            rules.append(_parse_rule(raw, extra.get(raw.get("name"), [])))
            _check_qualifies(rules[-1], {str(name) for name in names})
        except RuleError as exc:
            raise RuleError(f"rule {raw.get('name', f'#{number}')!r}: {exc}") from None
    if rules[-1].category != CATCH_ALL_CATEGORY or not rules[-1].patterns:
        raise ValueError("the last rule is the catch-all (category 'unknown', with patterns)")
    facts = tuple(
        Fact(f["name"], tuple(f["patterns"]), _compile_all(f["patterns"]))
        for f in data.get("fact", [])
    )
    return RuleSet(
        str(data["version"]),
        tuple(rules),
        facts,
        _compile_all(data.get("boilerplate", [])),
        _any_of(data.get("weak", [])),
        _any_of(data.get("advice", [])),
        _any_of(data.get("headers", [])),
    )


@cache
def _load_cached(path: Path) -> RuleSet:
    tables = path.with_name(TABLES_NAME)
    text = tables.read_text(encoding="utf-8") if tables.exists() else ""
    return parse_rules(path.read_text(encoding="utf-8"), text)


def load_rules(path: str | Path | None = None) -> RuleSet:
    """The rule set at `path` (default: the packaged rules.toml, with the tables.toml beside
    it), parsed once per path."""
    return _load_cached(Path(path) if path else DEFAULT_RULES_PATH)


RULES_VERSION: str = load_rules().version


# The built-in rules with each distinct list of maintainers' own rules, parsed once per process.
_WITH_OWN: dict[str, RuleSet] = {}


def with_own_rules(own: Sequence[RuleTable]) -> RuleSet:
    """The built-in rules with the maintainers' own [[rules]] of ciflake.toml tried first, in
    the order given (a repository's own, then the top-level ones), parsed once per distinct list.
    Its version is the built-in one plus a digest of the own rules ("2026.12.9+1a2b3c4d"), so a
    failure shows what it was classified with. A mistake is a RuleError naming the file, the
    rule and the key."""
    base = load_rules()
    if not own:
        return base
    key = json.dumps([[table.where, table.table] for table in own], sort_keys=True, default=repr)
    if key not in _WITH_OWN:
        _WITH_OWN[key] = _combined(base, own)
    return _WITH_OWN[key]


def _combined(base: RuleSet, own: Sequence[RuleTable]) -> RuleSet:
    names = {rule.name for rule in base.rules}
    parsed: list[Rule] = []
    for table in own:
        try:
            rule = _parse_rule(table.table, [], origin=table.where)
            if rule.name in names:
                raise RuleError(f"key 'name': {rule.name!r} is already the name of a rule")
            if found := next(filter(None, map(refusal, rule.patterns)), None):
                raise RuleError(f"key 'patterns': {found}")
        except RuleError as exc:
            raise RuleError(f"{_named(table)}: {exc}") from None
        names.add(rule.name)
        parsed.append(rule)
    for rule, table in zip(parsed, own, strict=True):
        try:
            _check_qualifies(rule, names)
        except RuleError as exc:
            raise RuleError(f"{_named(table)}: {exc}") from None
    tables = json.dumps([table.table for table in own], sort_keys=True, default=repr)
    digest = hashlib.sha256(tables.encode()).hexdigest()[:8]
    return replace(base, version=f"{base.version}+{digest}", rules=(*parsed, *base.rules))


def _named(table: RuleTable) -> str:
    """Where a rule is written, with its name when it has one."""
    name = table.table.get("name")
    return f"{table.where}, rule {json.dumps(name)}" if isinstance(name, str) else table.where
