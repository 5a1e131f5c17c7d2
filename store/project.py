"""One tracked repository as a value: its workflows, lineages, events, invalid windows, default
branch, job-name rule, analysis settings and own classification rules. Every command and page
answers for one ``Project``; the settings of the process that runs them (database, API,
dashboard, schedule) stay in ``store.settings.Config``. Read from ``ciflake.toml`` by
``store.settings``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


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
class RuleTable:
    """A maintainer's own classification rule, as written in ``ciflake.toml``. The classifier
    (``collector.classify.rules``) owns the rule schema: it checks and compiles the table."""

    table: dict[str, Any]
    where: str  # the file and the entry: "ciflake.toml: [[rules]] #2"


@dataclass(frozen=True)
class IncidentSettings:
    """When failures with one cause make an incident (analytics.incidents; the reasoning is in
    docs/decisions/incidents.md): failures at most ``window_hours`` apart chain into one burst,
    which is an incident with at least ``min_jobs`` failed jobs in ``min_runs`` runs of
    ``min_workflows`` workflows, and at least ``min_share`` of the jobs exposed to the cause
    failing (the same runner, or the same jobs) while it lasted."""

    window_hours: float
    min_jobs: int
    min_runs: int
    min_workflows: int
    min_share: float

    @property
    def rule(self) -> str:
        """The settings in one line, kept with the incidents found with them
        (``DerivedState.incident_rule``): other settings, other incidents."""
        return (
            f"window_hours={self.window_hours:g} min_jobs={self.min_jobs} "
            f"min_runs={self.min_runs} min_workflows={self.min_workflows} "
            f"min_share={self.min_share:g}"
        )


@dataclass(frozen=True)
class Analysis:
    """The settings every analysis of one repository uses, passed whole so that the dashboard,
    the summary and the export compute with the same values (no function keeps a copy of a
    default of its own)."""

    window_days: int  # days either side of an event
    first_runs: int  # the first N runs after an event, however late
    min_runs: int  # fewer runs than this: "not enough data", no verdict
    stale_factor: float  # silent for this many usual gaps: STALE
    incidents: IncidentSettings
    recent_days: int  # [dashboard] recent_days: the window a status tile reads


@dataclass(frozen=True)
class TriageSettings:
    """When ``triage`` files, closes and caps issues for one repository ([triage], overridable
    per [[repositories]] entry): a signature is recurring with at least ``min_failures``
    failures in at least ``min_runs`` runs within ``window_days`` days on the default branch;
    its issue closes after ``quiet_days`` days without one; at most ``max_new`` issues are
    filed a night, ``pause_seconds`` apart (GitHub throttles creating content far below its
    documented limits). ``login``: the login ciflake's issues carry (None: ask GitHub)."""

    min_failures: int = 3
    min_runs: int = 2
    window_days: int = 7
    quiet_days: int = 14
    max_new: int = 3
    pause_seconds: float = 3.0
    login: str | None = None


@dataclass(frozen=True)
class Project:
    repo: str
    default_branch: str
    job_name_strip: str
    analysis: Analysis
    workflows: tuple[WorkflowConfig, ...]
    lineages: tuple[LineageConfig, ...]
    events: tuple[EventConfig, ...]
    invalid_windows: tuple[InvalidWindow, ...]
    summary_pr: int | None
    # the maintainers' own [[rules]], tried before the built-in ones: this repository's, then
    # the top-level ones
    rules: tuple[RuleTable, ...] = ()
    triage: TriageSettings = TriageSettings()

    def workflow(self, path: str) -> WorkflowConfig | None:
        return next((w for w in self.workflows if w.path == path), None)

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags of the workflows, each once, in the order the config gives them."""
        return tuple(dict.fromkeys(tag for w in self.workflows for tag in w.tags))
