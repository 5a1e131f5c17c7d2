"""Configuration: built-in verl defaults < ``ciflake.toml`` < environment < command-line flags.

Everything is validated here, once, so the rest of the code can trust it; every problem is
reported as one ``ConfigError`` line that names the file and the key. In ``store`` so that
every layer reads the same validated values. Over 350 lines because the schema (``_TABLES``),
its checks and the ``Config`` they fill are one thing: each change touches all three.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from store.project import (
    Analysis,
    EventConfig,
    IncidentSettings,
    InvalidWindow,
    LineageConfig,
    Project,
    RuleTable,
    TriageSettings,
    WorkflowConfig,
)
from store.vocabulary import EVENT_KINDS

DEFAULTS_NAME = "verl_defaults.toml"
DEFAULT_CONFIG_FILE = "ciflake.toml"
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, tzinfo=UTC)
MAX_COUNT = 100_000  # days, minutes, workers or runs: far beyond any sensible setting
MAX_PAUSE = 3600.0  # seconds between two issues triage files: an hour at most


class ConfigError(ValueError):
    """A configuration problem, worded for the user in one line."""


@dataclass(frozen=True)
class Config:
    """The settings of the process (database, API, token, collect rhythm, summary clock,
    dashboard) and the repositories it tracks, each a ``Project``."""

    api_url: str
    database_url: str
    token: str | None = field(repr=False)
    token_source: str
    interval_minutes: int
    trailing_days: int
    since_days_before_first_event: int
    log_workers: int
    collect_window_days: int
    collect_reserve: int
    summary_nightly_at: str
    dashboard_host: str
    dashboard_port: int
    dashboard_recent_days: int
    projects: tuple[Project, ...]
    defaults: Analysis  # [analytics]: for a repository in the database but not in the config
    triage: TriageSettings  # [triage]: likewise
    default_branch: str
    job_name_strip: str
    source: str
    rules: tuple[RuleTable, ...] = ()  # the top-level [[rules]]: every repository's

    def with_overrides(self, **changes: Any) -> Config:
        return replace(self, **changes)

    @property
    def repos(self) -> tuple[str, ...]:
        return tuple(p.repo for p in self.projects)

    def project(self, repo: str | None = None) -> Project:
        """The configured repository ``repo`` (in any case, as GitHub reads names; the
        project keeps the configured spelling); without one, the only one configured. A name
        the config does not list is a one-line error that lists those it does."""
        configured = ", ".join(self.repos)
        if repo is None:
            if len(self.projects) == 1:
                return self.projects[0]
            raise ConfigError(
                f"{self.source}: {len(self.projects)} repositories are configured "
                f"({configured}): choose one with --repo"
            )
        for project in self.projects:  # GitHub ignores case in OWNER/NAME; so does --repo
            if project.repo.lower() == repo.lower():
                return project
        raise ConfigError(
            f"{self.source}: repository {repo!r} is not configured (configured: {configured}); "
            "add it as a [[repositories]] entry"
        )

    def project_for(self, repo: str) -> Project:
        """``project(repo)``, or for a repository the database holds but the config does not
        list, one with no workflows, lineages or events and the [analytics] settings."""
        if repo in self.repos:
            return self.project(repo)
        return Project(
            repo,
            self.default_branch,
            self.job_name_strip,
            self.defaults,
            (),
            (),
            (),
            (),
            None,
            self.rules,
            self.triage,
        )

    def select(self, repo: str | None) -> tuple[Project, ...]:
        """Every configured repository, or only ``repo`` (checked) when given."""
        return self.projects if repo is None else (self.project(repo),)


# [analytics] keys of IncidentSettings, also overridable per [[repositories]] entry
INCIDENT_KEYS: dict[str, type | tuple[type, ...]] = {
    "incident_window_hours": (int, float),
    "incident_min_jobs": int,
    "incident_min_runs": int,
    "incident_min_workflows": int,
    "incident_min_share": (int, float),
}
# Known keys per table, with their types: anything else is a mistake worth one clear line.
_TABLES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "github": {"repo": str, "api_url": str, "token_file": str},
    "database": {"url": str},
    "collect": {
        "interval_minutes": int,
        "trailing_days": int,
        "since_days_before_first_event": int,
        "log_workers": int,
        "window_days": int,
        "reserve": int,
    },
    "summary": {"nightly_at": str, "pr": int},
    "analytics": {
        "window_days": int,
        "first_runs": int,
        "min_runs": int,
        "default_branch": str,
        "job_name_strip": str,
        "stale_factor": (int, float),
        **INCIDENT_KEYS,
    },
    "dashboard": {"host": str, "port": int, "recent_days": int},
    "triage": {
        "min_failures": int,
        "min_runs": int,
        "window_days": int,
        "quiet_days": int,
        "max_new": int,
        "pause_seconds": (int, float),
        "login": str,
    },
}
_LISTS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "workflows": {"path": str, "tags": list, "accelerator": str, "lineage": str},
    "lineages": {"name": str, "job_renames": dict},
    "events": {
        "date": (str, datetime, date),
        "title": str,
        "pr": int,
        "kind": str,
        "lineages": list,
    },
    "invalid_windows": {
        "workflow": str,
        "from": (str, datetime, date),
        "to": (str, datetime, date),
        "reason": str,
    },
}
# A [[repositories]] entry: its repository, optional overrides of [analytics] and [summary] pr,
# a ``triage`` table overriding [triage] key by key, and its own arrays of tables (_LISTS),
# which are checked as the top-level ones are.
_REPOSITORY: dict[str, type | tuple[type, ...]] = {
    "repo": str,
    "default_branch": str,
    "job_name_strip": str,
    "window_days": int,
    "first_runs": int,
    "min_runs": int,
    "stale_factor": (int, float),
    **INCIDENT_KEYS,
    "summary_pr": int,
    "triage": dict,
    **dict.fromkeys(("workflows", "lineages", "events", "invalid_windows", "rules"), list),
}
# The maintainers' own classification rules: an array of tables here, each table checked by
# the classifier, which owns the rule schema (collector.classify.rules, at the shell's load).
RULES = "rules"
# The settings that may be unset (no default in verl_defaults.toml): every other key of _TABLES
# has its one default there (tests/test_config.py holds that).
OPTIONAL_SETTINGS = frozenset({("github", "token_file"), ("triage", "login")})

_REQUIRED: dict[str, tuple[str, ...]] = {
    "workflows": ("path", "lineage"),
    "lineages": ("name",),
    "events": ("date", "title"),
    "invalid_windows": ("workflow", "from", "to"),
}


def _read_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"{source}: arrays or inline tables nested too deeply") from None


def _place(name: str, repo: str | None, number: int | None = None) -> str:
    """How a message names an array of tables (or its entry ``number``): ``[[events]] #2``, or
    inside a ``[[repositories]]`` entry (``repo``) ``[[repositories.events]] #2 of OWNER/NAME``."""
    table = f"[[{name}]]" if repo is None else f"[[repositories.{name}]]"
    numbered = table if number is None else f"{table} #{number}"
    return numbered if repo is None else f"{numbered} of {repo}"


def _check_keys(data: dict[str, Any], source: str, repo: str | None = None) -> None:
    """Check the keys and types of ``data``: the file's top level, or (``repo``) the arrays of
    tables of that repository's ``[[repositories]]`` entry."""
    prefix = "" if repo is None else "repositories."
    for name, value in data.items():
        if name in _TABLES and repo is None:
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{name}' must be a table")
            _check_entry(value, _TABLES[name], f"{source}: [{name}]")
        elif name == RULES:
            _array_of_tables(value, f"{prefix}{name}", source)
        elif name in _LISTS or (name == "repositories" and repo is None):
            for i, entry in enumerate(_array_of_tables(value, f"{prefix}{name}", source)):
                entry_where = f"{source}: {_place(name, repo, i + 1)}"
                if name == "repositories":
                    _check_entry(entry, _REPOSITORY, entry_where)
                    if "repo" not in entry:
                        raise ConfigError(f"{entry_where}: missing key 'repo'")
                    triage_where = f"{entry_where}: triage"
                    _check_entry(entry.get("triage", {}), _TABLES["triage"], triage_where)
                    lists = {k: v for k, v in entry.items() if k in _LISTS or k == RULES}
                    _check_keys(lists, source, repo=entry["repo"])
                    continue
                _check_entry(entry, _LISTS[name], entry_where)
                for key in _REQUIRED[name]:
                    if key not in entry:
                        raise ConfigError(f"{entry_where}: missing key '{key}'")
        else:
            known = ", ".join(sorted([*_TABLES, *_LISTS, "repositories", RULES]))
            raise ConfigError(f"{source}: unknown key '{name}' (known: {known})")


def _array_of_tables(value: Any, name: str, source: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{source}: '{name}' must be an array of tables [[{name}]]")
    return value


def _check_entry(entry: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    for key, value in entry.items():
        if key not in schema:
            raise ConfigError(f"{where}: unknown key '{key}' (known: {', '.join(schema)})")
        expected = schema[key]
        if isinstance(value, bool) or not isinstance(value, expected):
            names = (
                expected.__name__
                if isinstance(expected, type)
                else "/".join(t.__name__ for t in expected)
            )
            raise ConfigError(f"{where}: '{key}' must be {names}, got {value!r}")


def parse_datetime(value: str | datetime | date, where: str = "date") -> datetime:
    """A UTC datetime from a TOML datetime or an ISO-8601 string; a bare date means 00:00 UTC.
    Dates outside EARLIEST..LATEST are refused: windows around them would overflow."""
    try:
        moment = _utc(value, where)
    except OverflowError:
        moment = datetime.min.replace(tzinfo=UTC)
    if not EARLIEST <= moment <= LATEST:
        raise ConfigError(f"{where}: date {value!r} is out of range ({EARLIEST:%Y} to {LATEST:%Y})")
    return moment


def _utc(value: str | datetime | date, where: str) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{where}: bad date {value!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"
        ) from None
    return _utc(parsed, where)


def _workflows(
    entries: list[dict[str, Any]], source: str, repo: str | None
) -> tuple[WorkflowConfig, ...]:
    seen: set[str] = set()
    out = []
    for entry in entries:
        path = entry["path"]
        if path in seen:
            where = _place("workflows", repo)
            raise ConfigError(f"{source}: {where}: path {path!r} is listed twice")
        seen.add(path)
        out.append(
            WorkflowConfig(
                path=path,
                tags=tuple(str(t) for t in entry.get("tags", [])),
                accelerator=entry.get("accelerator", "gpu"),
                lineage=entry["lineage"],
            )
        )
    return tuple(out)


def _events(
    entries: list[dict[str, Any]], source: str, repo: str | None
) -> tuple[EventConfig, ...]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: {_place('events', repo, i + 1)}"
        kind = entry.get("kind", "migration")
        if kind not in EVENT_KINDS:
            raise ConfigError(f"{where}: kind {kind!r} not in {', '.join(EVENT_KINDS)}")
        lineages = entry.get("lineages")
        out.append(
            EventConfig(
                date=parse_datetime(entry["date"], f"{where} 'date'"),
                title=entry["title"],
                pr=entry.get("pr"),
                kind=kind,
                lineages=tuple(lineages) if lineages is not None else None,
            )
        )
    return tuple(sorted(out, key=lambda e: e.date))


def _windows(
    entries: list[dict[str, Any]], source: str, repo: str | None
) -> tuple[InvalidWindow, ...]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: {_place('invalid_windows', repo, i + 1)}"
        start = parse_datetime(entry["from"], f"{where} 'from'")
        end = parse_datetime(entry["to"], f"{where} 'to'")
        if end < start:
            raise ConfigError(f"{where}: 'to' is before 'from'")
        out.append(InvalidWindow(entry["workflow"], start, end, entry.get("reason", "")))
    return tuple(out)


def _merge(defaults: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; arrays of tables ([[workflows]], [[events]]...) replace."""
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in defaults.items()}
    for key, value in user.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _read_token(env: dict[str, str], token_file: str | None, source: str) -> tuple[str | None, str]:
    if env.get("GITHUB_TOKEN"):
        return env["GITHUB_TOKEN"].strip(), "environment GITHUB_TOKEN"
    path = env.get("CIFLAKE_TOKEN_FILE") or token_file
    if not path:
        return None, "unset"
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        named = (
            "CIFLAKE_TOKEN_FILE"
            if env.get("CIFLAKE_TOKEN_FILE")
            else f"{source}: [github] token_file"
        )
        raise ConfigError(f"{named}: cannot read token file {path}: {exc.strerror}") from None
    return (token or None), f"file {path}"


def config_file(
    path: str | os.PathLike[str] | None, env: dict[str, str]
) -> str | os.PathLike[str] | None:
    """The file ``load_config`` reads: ``path``, else ``CIFLAKE_CONFIG``, else ``./ciflake.toml``
    when it exists; None when there is none (the built-in defaults alone)."""
    if found := path or env.get("CIFLAKE_CONFIG"):
        return found
    return DEFAULT_CONFIG_FILE if Path(DEFAULT_CONFIG_FILE).is_file() else None


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    db_url: str | None = None,
    api_url: str | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    """The effective configuration. ``path`` (or ``CIFLAKE_CONFIG``, or ``./ciflake.toml`` when
    it exists) is read over the built-in verl defaults; flags given here win over both."""
    # here, not at the top: `ciflake classify` asks config_file() without loading SQLAlchemy
    from store.engine import DatabaseURLError, parse_url

    env = dict(os.environ) if env is None else env
    defaults_text = resources.files("store").joinpath(DEFAULTS_NAME).read_text("utf-8")
    builtin = _read_toml(defaults_text, "built-in defaults")
    data, user = builtin, {}
    source = "built-in verl defaults"
    config_path = config_file(path, env)
    if config_path is not None:
        file = Path(config_path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(f"cannot read config file {file}: {reason}") from None
        user = _read_toml(text, str(file))
        _check_keys(user, str(file))
        data = _merge(builtin, user)
        source = str(file)
    _check_keys(data, source)

    # Every setting has its default in verl_defaults.toml, and tables merge key by key, so
    # each key below is there; only [github] token_file may be unset.
    github, database = data["github"], data["database"]
    collect, summary = data["collect"], data["summary"]
    analytics, dashboard = data["analytics"], data["dashboard"]

    database_url = db_url or env.get("CIFLAKE_DB_URL") or database["url"]
    try:
        parse_url(database_url)
    except DatabaseURLError as exc:
        raise ConfigError(f"database URL: {exc}") from None
    nightly = summary["nightly_at"]
    if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", nightly):
        raise ConfigError(f"{source}: [summary] nightly_at must be HH:MM, got {nightly!r}")
    token, token_source = _read_token(env, github.get("token_file"), source)

    positive = {
        "[collect] interval_minutes": collect["interval_minutes"],
        "[collect] log_workers": collect["log_workers"],
        "[collect] window_days": collect["window_days"],
        "[dashboard] recent_days": dashboard["recent_days"],
    }
    _check_counts(positive, source, least=1)
    spans = {
        "[collect] trailing_days": collect["trailing_days"],
        "[collect] reserve": collect["reserve"],
        "[collect] since_days_before_first_event": collect["since_days_before_first_event"],
    }
    _check_counts(spans, source, least=0)
    recent_days = dashboard["recent_days"]
    defaults = _analysis(analytics, source, "[analytics]", recent_days)
    triage = _triage(data["triage"], source, "[triage]")
    _check_regex(analytics["job_name_strip"], f"{source}: [analytics] job_name_strip")
    rules = _rule_tables(data.get(RULES, []), source, None)
    return Config(
        api_url=(api_url or env.get("CIFLAKE_API_URL") or github["api_url"]).rstrip("/"),
        database_url=database_url,
        token=token,
        token_source=token_source,
        interval_minutes=collect["interval_minutes"],
        trailing_days=collect["trailing_days"],
        since_days_before_first_event=collect["since_days_before_first_event"],
        log_workers=collect["log_workers"],
        collect_window_days=collect["window_days"],
        collect_reserve=collect["reserve"],
        summary_nightly_at=nightly,
        dashboard_host=dashboard["host"],
        dashboard_port=dashboard["port"],
        dashboard_recent_days=dashboard["recent_days"],
        projects=_projects(builtin, user, data, source, rules, recent_days),
        defaults=defaults,
        triage=triage,
        default_branch=analytics["default_branch"],
        job_name_strip=analytics["job_name_strip"],
        source=source,
        rules=rules,
    )


def _rule_tables(
    entries: list[dict[str, Any]], source: str, repo: str | None
) -> tuple[RuleTable, ...]:
    return tuple(
        RuleTable(entry, f"{source}: {_place(RULES, repo, i + 1)}")
        for i, entry in enumerate(entries)
    )


_LIST_NAMES = ("workflows", "lineages", "events", "invalid_windows")


def _projects(
    builtin: dict[str, Any],
    user: dict[str, Any],
    data: dict[str, Any],
    source: str,
    rules: tuple[RuleTable, ...],
    recent_days: int,
) -> tuple[Project, ...]:
    """The single-repository form ([github] repo and top-level arrays) means one repository;
    ``[[repositories]]`` lists several, each over [analytics]. Only the built-in repository
    takes the built-in workflows, lineages, events, invalid windows and [summary] pr, when its
    entry gives no workflows: another repository has what its own entry gives (in the
    single form, the file's arrays and [summary] pr), never verl's story."""
    analytics, summary_pr = data["analytics"], data["summary"]["pr"]
    triage = data["triage"]
    if "repositories" not in user:
        repo = data["github"]["repo"]
        builtin_repo = repo == builtin["github"]["repo"]
        lists = data if builtin_repo else user
        own_pr = summary_pr if builtin_repo else user.get("summary", {}).get("pr")
        only = {"repo": repo, "summary_pr": own_pr}
        only.update({name: lists.get(name, []) for name in _LIST_NAMES})
        project = _project(
            only, analytics, triage, source, "[github]", rules, recent_days, nested=False
        )
        if not project.workflows:
            raise ConfigError(f"{source}: repository {repo!r} has no [[workflows]] to track")
        return (project,)
    if given := [name for name in _LIST_NAMES if name in user]:
        raise ConfigError(
            f"{source}: [[{given[0]}]] beside [[repositories]]: move it into its repository's "
            f"entry as [[repositories.{given[0]}]]"
        )
    projects: dict[str, Project] = {}
    for i, entry in enumerate(user["repositories"]):
        where = f"[[repositories]] #{i + 1}"
        if entry["repo"] == builtin["github"]["repo"] and "workflows" not in entry:
            entry = {
                **{name: builtin.get(name, []) for name in _LIST_NAMES},
                "summary_pr": summary_pr,
                **entry,
            }
        elif "workflows" not in entry:
            raise ConfigError(f"{source}: {where}: missing key 'workflows'")
        project = _project(entry, analytics, triage, source, where, rules, recent_days, nested=True)
        if project.repo.lower() in projects:
            raise ConfigError(f"{source}: {where}: repository {project.repo!r} is listed twice")
        projects[project.repo.lower()] = project
    if not projects:
        raise ConfigError(f"{source}: [[repositories]] lists no repository")
    return tuple(projects.values())


def _project(
    entry: dict[str, Any],
    analytics: dict[str, Any],
    triage: dict[str, Any],
    source: str,
    where: str,
    rules: tuple[RuleTable, ...],
    recent_days: int,
    *,
    nested: bool,
) -> Project:
    """One repository from its entry, each missing setting taken from [analytics] and
    [triage], its own [[rules]] before the top-level ``rules``. ``nested``: its arrays of
    tables are in a [[repositories]] entry, and messages name them so."""
    repo = entry["repo"]
    lists_of = repo if nested else None
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise ConfigError(f"{source}: {where} repo must be OWNER/NAME, got {repo!r}")
    settings = {**analytics, **{k: v for k, v in entry.items() if k in analytics}}
    strip = settings["job_name_strip"]
    _check_regex(strip, f"{source}: {where} job_name_strip")
    return Project(
        repo=repo,
        default_branch=settings["default_branch"],
        job_name_strip=strip,
        analysis=_analysis(settings, source, where, recent_days),
        workflows=_workflows(entry.get("workflows", []), source, lists_of),
        lineages=tuple(
            LineageConfig(e["name"], {str(k): str(v) for k, v in e.get("job_renames", {}).items()})
            for e in entry.get("lineages", [])
        ),
        events=_events(entry.get("events", []), source, lists_of),
        invalid_windows=_windows(entry.get("invalid_windows", []), source, lists_of),
        summary_pr=entry.get("summary_pr"),
        rules=(*_rule_tables(entry.get(RULES, []), source, lists_of), *rules),
        triage=_triage({**triage, **entry.get("triage", {})}, source, f"{where} triage"),
    )


def _analysis(settings: dict[str, Any], source: str, where: str, recent_days: int) -> Analysis:
    counts = {f"{where} {key}": settings[key] for key in ("window_days", "first_runs")}
    _check_counts(counts, source, least=1)
    return Analysis(
        window_days=settings["window_days"],
        first_runs=settings["first_runs"],
        min_runs=settings["min_runs"],
        stale_factor=float(settings["stale_factor"]),
        incidents=_incidents(settings, source, where),
        recent_days=recent_days,
    )


def _incidents(settings: dict[str, Any], source: str, where: str) -> IncidentSettings:
    counts = ("incident_min_jobs", "incident_min_runs", "incident_min_workflows")
    _check_counts({f"{where} {key}": settings[key] for key in counts}, source, least=1)
    hours, share = float(settings["incident_window_hours"]), float(settings["incident_min_share"])
    if hours <= 0:
        raise ConfigError(
            f"{source}: {where} incident_window_hours must be positive, got {hours:g}"
        )
    if not 0 < share <= 1:
        raise ConfigError(f"{source}: {where} incident_min_share must be in (0, 1], got {share:g}")
    return IncidentSettings(
        window_hours=hours,
        min_jobs=settings["incident_min_jobs"],
        min_runs=settings["incident_min_runs"],
        min_workflows=settings["incident_min_workflows"],
        min_share=share,
    )


def _triage(settings: dict[str, Any], source: str, where: str) -> TriageSettings:
    counts = ("min_failures", "min_runs", "window_days", "quiet_days", "max_new")
    _check_counts({f"{where} {key}": settings[key] for key in counts[:-1]}, source, least=1)
    _check_counts({f"{where} max_new": settings["max_new"]}, source, least=0)
    pause = float(settings["pause_seconds"])
    if not 0 <= pause <= MAX_PAUSE:
        raise ConfigError(
            f"{source}: {where} pause_seconds must be between 0 and {MAX_PAUSE:g}, got {pause:g}"
        )
    return TriageSettings(
        **{key: settings[key] for key in counts},
        pause_seconds=pause,
        login=settings.get("login") or None,
    )


def _check_counts(counts: dict[str, int], source: str, *, least: int) -> None:
    """Days, minutes, workers and runs: at least ``least``, and never so many that date
    arithmetic and sleeps overflow."""
    for key, value in counts.items():
        if value < least:
            word = "positive" if least == 1 else f"at least {least}"
            raise ConfigError(f"{source}: {key} must be {word}, got {value}")
        if value > MAX_COUNT:
            raise ConfigError(f"{source}: {key} must be between 0 and {MAX_COUNT}, got {value}")


def _check_regex(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where} is not a regex: {exc}") from None
