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

from store.engine import DatabaseURLError, parse_url
from store.vocabulary import EVENT_KINDS

DEFAULTS_NAME = "verl_defaults.toml"
DEFAULT_CONFIG_FILE = "ciflake.toml"
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, tzinfo=UTC)
MAX_COUNT = 100_000  # days, minutes, workers or runs: far beyond any sensible setting


class ConfigError(ValueError):
    """A configuration problem, worded for the user in one line."""


@dataclass(frozen=True)
class WorkflowConfig:
    path: str
    tags: tuple[str, ...]
    accelerator: str
    lineage: str


@dataclass(frozen=True)
class LineageConfig:
    name: str
    job_renames: dict[str, str]


@dataclass(frozen=True)
class EventConfig:
    date: datetime
    title: str
    pr: int | None
    kind: str
    lineages: tuple[str, ...] | None  # None: every lineage


@dataclass(frozen=True)
class InvalidWindow:
    workflow: str
    start: datetime
    end: datetime
    reason: str


@dataclass(frozen=True)
class Config:
    repo: str
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
    summary_pr: int | None
    window_days: int
    first_runs: int
    min_runs: int
    default_branch: str
    job_name_strip: str
    stale_factor: float
    dashboard_host: str
    dashboard_port: int
    dashboard_recent_days: int
    workflows: tuple[WorkflowConfig, ...]
    lineages: tuple[LineageConfig, ...]
    events: tuple[EventConfig, ...]
    invalid_windows: tuple[InvalidWindow, ...]
    source: str

    def with_overrides(self, **changes: Any) -> Config:
        return replace(self, **changes)

    def workflow(self, path: str) -> WorkflowConfig | None:
        return next((w for w in self.workflows if w.path == path), None)


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
    },
    "dashboard": {"host": str, "port": int, "recent_days": int},
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
# The settings that may be unset (no default in verl_defaults.toml): every other key of _TABLES
# has its one default there (tests/test_config.py holds that).
OPTIONAL_SETTINGS = frozenset({("github", "token_file")})

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


def _check_keys(data: dict[str, Any], source: str) -> None:
    for name, value in data.items():
        where = f"{source}: [{name}]"
        if name in _TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{name}' must be a table")
            _check_entry(value, _TABLES[name], where)
        elif name in _LISTS:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ConfigError(f"{source}: '{name}' must be an array of tables [[{name}]]")
            for i, entry in enumerate(value):
                entry_where = f"{source}: [[{name}]] #{i + 1}"
                _check_entry(entry, _LISTS[name], entry_where)
                for key in _REQUIRED[name]:
                    if key not in entry:
                        raise ConfigError(f"{entry_where}: missing key '{key}'")
        else:
            known = ", ".join(sorted([*_TABLES, *_LISTS]))
            raise ConfigError(f"{source}: unknown key '{name}' (known: {known})")


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


def _workflows(entries: list[dict[str, Any]], source: str) -> tuple[WorkflowConfig, ...]:
    seen: set[str] = set()
    out = []
    for entry in entries:
        path = entry["path"]
        if path in seen:
            raise ConfigError(f"{source}: [[workflows]] path {path!r} is listed twice")
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


def _events(entries: list[dict[str, Any]], source: str) -> tuple[EventConfig, ...]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: [[events]] #{i + 1} 'date'"
        kind = entry.get("kind", "migration")
        if kind not in EVENT_KINDS:
            raise ConfigError(
                f"{source}: [[events]] #{i + 1}: kind {kind!r} not in {', '.join(EVENT_KINDS)}"
            )
        lineages = entry.get("lineages")
        out.append(
            EventConfig(
                date=parse_datetime(entry["date"], where),
                title=entry["title"],
                pr=entry.get("pr"),
                kind=kind,
                lineages=tuple(lineages) if lineages is not None else None,
            )
        )
    return tuple(sorted(out, key=lambda e: e.date))


def _windows(entries: list[dict[str, Any]], source: str) -> tuple[InvalidWindow, ...]:
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: [[invalid_windows]] #{i + 1}"
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
        raise ConfigError(f"{source}: cannot read token file {path}: {exc.strerror}") from None
    return (token or None), f"file {path}"


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    db_url: str | None = None,
    api_url: str | None = None,
    repo: str | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    """The effective configuration. ``path`` (or ``CIFLAKE_CONFIG``, or ``./ciflake.toml`` when
    it exists) is read over the built-in verl defaults; flags given here win over both."""
    env = dict(os.environ) if env is None else env
    defaults_text = resources.files("store").joinpath(DEFAULTS_NAME).read_text("utf-8")
    data = _read_toml(defaults_text, "built-in defaults")
    source = "built-in verl defaults"
    config_path = path or env.get("CIFLAKE_CONFIG")
    if config_path is None and Path(DEFAULT_CONFIG_FILE).is_file():
        config_path = DEFAULT_CONFIG_FILE
    if config_path is not None:
        file = Path(config_path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(f"cannot read config file {file}: {reason}") from None
        user = _read_toml(text, str(file))
        _check_keys(user, str(file))
        data = _merge(data, user)
        source = str(file)
    _check_keys(data, source)

    # Every setting has its default in verl_defaults.toml, and tables merge key by key, so
    # each key below is there; only [github] token_file may be unset.
    github, database = data["github"], data["database"]
    collect, summary = data["collect"], data["summary"]
    analytics, dashboard = data["analytics"], data["dashboard"]

    repo = repo or github["repo"]
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise ConfigError(f"{source}: [github] repo must be OWNER/NAME, got {repo!r}")
    database_url = db_url or env.get("CIFLAKE_DB_URL") or database["url"]
    try:
        parse_url(database_url)
    except DatabaseURLError as exc:
        raise ConfigError(f"database URL: {exc}") from None
    strip = analytics["job_name_strip"]
    try:
        re.compile(strip)
    except re.error as exc:
        raise ConfigError(f"{source}: [analytics] job_name_strip is not a regex: {exc}") from None
    nightly = summary["nightly_at"]
    if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", nightly):
        raise ConfigError(f"{source}: [summary] nightly_at must be HH:MM, got {nightly!r}")
    token, token_source = _read_token(env, github.get("token_file"), source)

    workflows = _workflows(data.get("workflows", []), source)
    lineages = tuple(
        LineageConfig(e["name"], {str(k): str(v) for k, v in e.get("job_renames", {}).items()})
        for e in data.get("lineages", [])
    )
    positive = {
        "[collect] interval_minutes": collect["interval_minutes"],
        "[collect] log_workers": collect["log_workers"],
        "[collect] window_days": collect["window_days"],
        "[analytics] window_days": analytics["window_days"],
        "[analytics] first_runs": analytics["first_runs"],
        "[dashboard] recent_days": dashboard["recent_days"],
    }
    for key, value in positive.items():
        if value <= 0:
            raise ConfigError(f"{source}: {key} must be positive, got {value}")
    spans = {
        **positive,
        "[collect] trailing_days": collect["trailing_days"],
        "[collect] reserve": collect["reserve"],
        "[collect] since_days_before_first_event": collect["since_days_before_first_event"],
    }
    for key, value in spans.items():  # beyond this, date arithmetic and sleeps overflow
        if not 0 <= value <= MAX_COUNT:
            raise ConfigError(f"{source}: {key} must be between 0 and {MAX_COUNT}, got {value}")
    return Config(
        repo=repo,
        api_url=(api_url or env.get("CIFLAKE_API_URL") or github["api_url"]).rstrip("/"),
        database_url=database_url,
        token=token,
        token_source=token_source,
        interval_minutes=positive["[collect] interval_minutes"],
        trailing_days=spans["[collect] trailing_days"],
        since_days_before_first_event=spans["[collect] since_days_before_first_event"],
        log_workers=positive["[collect] log_workers"],
        collect_window_days=positive["[collect] window_days"],
        collect_reserve=spans["[collect] reserve"],
        summary_nightly_at=nightly,
        summary_pr=summary["pr"],
        window_days=positive["[analytics] window_days"],
        first_runs=positive["[analytics] first_runs"],
        min_runs=analytics["min_runs"],
        default_branch=analytics["default_branch"],
        job_name_strip=strip,
        stale_factor=float(analytics["stale_factor"]),
        dashboard_host=dashboard["host"],
        dashboard_port=dashboard["port"],
        dashboard_recent_days=positive["[dashboard] recent_days"],
        workflows=workflows,
        lineages=lineages,
        events=_events(data.get("events", []), source),
        invalid_windows=_windows(data.get("invalid_windows", []), source),
        source=source,
    )
