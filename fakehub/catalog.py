"""The CI descriptions fakehub simulates, one JSON file per repository, loaded into typed records.

`data/verl_ci.json` (verl) is condensed by hand from the shared research notes, so that fakehub
carries its own facts (workflows, jobs, runners, windows, events, failure processes) and imports
nothing else. `data/verl_recipe_ci.json` is a second, much smaller repository of our own
invention beside it (verl's recipes), with its own workflows, failure mix and one event.

A catalog's `stream` names the random stream its history draws from: verl has none and draws
from the seed alone, as it always has; any other repository draws from "<stream>:<seed>", so
that adding or changing one leaves verl's history byte for byte as it was. `ids` gives the
bases of its run, job, issue and pull-request ids, far enough apart that two repositories never
share one (GitHub's ids are global).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).with_name("data")
DATA = DATA_DIR / "verl_ci.json"
VERL = "verl-project/verl"
# Every repository fakehub simulates, by "owner/name" (lower case), with its data file.
CATALOGS = {VERL: "verl_ci.json", "verl-project/verl-recipe": "verl_recipe_ci.json"}
# verl's ids, which its history and payloads have always used: the defaults of `ids`.
DEFAULT_IDS = {
    "run": 17_600_000_000,
    "job": 49_000_000_000,
    "issue": 3_100_000_000,
    "pull": 2_800_000_000,
}
DEFAULT_DESCRIPTION = "verl: Volcano Engine Reinforcement Learning for LLMs"
FAR_PAST = datetime(2000, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
# GitHub has shown both forms of a run of an invalid workflow file: `failure` with no jobs and
# `startup_failure` (otto-de/gitactionboard#271). fakehub gives windows that open before this
# date the first form and later ones the second, so every history has both.
STARTUP_FAILURE_FROM = datetime(2026, 6, 1, tzinfo=UTC)


def parse_time(text: str | None, default: datetime = FAR_PAST) -> datetime:
    """An ISO date or time (UTC) from the data file; None gives the default."""
    if text is None:
        return default
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@lru_cache(maxsize=1024)
def _since(text: str | None) -> datetime:
    """``parse_time`` of a timeline's date, kept: the data files hold a few hundred, and every
    job's limit and runner label are looked up in a timeline."""
    return parse_time(text)


def dated(pairs: list[list[Any]], at: datetime) -> Any:
    """The value of a `[[since, value], ...]` timeline at a moment (the last one started)."""
    current = pairs[0][1]
    for since, value in pairs:
        if _since(since) <= at:
            current = value
    return current


@dataclass(frozen=True)
class JobSpec:
    """One job of a workflow file, with when it existed and how it behaves."""

    id: str
    name: str
    kind: str  # setup | cleanup | gpu_test | npu_test
    tags: frozenset[str]
    algo: str
    strategy: str
    timeouts: list[list[Any]]
    minutes: tuple[float, float]
    runners: list[list[Any]]
    start: datetime
    end: datetime
    needs_from: datetime
    absent: tuple[tuple[datetime, datetime], ...]

    def exists(self, at: datetime) -> bool:
        return self.start <= at < self.end and not any(a <= at < b for a, b in self.absent)

    def timeout_minutes(self, at: datetime) -> int:
        return int(dated(self.timeouts, at))

    def runner_label(self, at: datetime) -> str:
        return str(dated(self.runners, at))


@dataclass(frozen=True)
class CronEntry:
    """One `on.schedule` entry: a POSIX cron line and its IANA timezone (None: UTC)."""

    cron: str
    timezone: str | None = None


PUSH_AND_PR = ("push", "pull_request")
ACTIVE = "active"


@dataclass(frozen=True)
class WorkflowSpec:
    """A workflow file: its id, name, active windows, invalid windows and jobs; its triggers
    (`on:`), cron lines and when GitHub stops firing them; its `state` over time."""

    id: int
    path: str
    name: str
    family: str
    accelerator: str
    push_share: float
    pr_share: float
    present: tuple[tuple[datetime, datetime], ...]
    invalid: tuple[tuple[datetime, datetime, str], ...]
    jobs: tuple[JobSpec, ...]
    broken_steps: tuple[tuple[datetime, datetime, str, str], ...]
    events: tuple[str, ...] = PUSH_AND_PR
    schedule: tuple[CronEntry, ...] = ()
    schedule_until: datetime = FAR_FUTURE  # GitHub fires no scheduled run from then on
    states: tuple[tuple[datetime, str], ...] = ((FAR_PAST, ACTIVE),)

    def active(self, at: datetime) -> bool:
        """Its file is on the default branch at ``at``."""
        return any(a <= at < b for a, b in self.present)

    def state(self, at: datetime) -> str:
        """The workflows API's `state` at ``at``: a deleted file leaves it as it was (GitHub
        keeps listing a deleted workflow `active`)."""
        return next((state for since, state in reversed(self.states) if since <= at), ACTIVE)

    def runs_on(self, event: str, at: datetime) -> bool:
        """Whether a push or pull request at ``at`` starts this workflow: its file is there,
        its `on:` names the event and it is enabled (a disabled workflow runs on nothing)."""
        return event in self.events and self.active(at) and self.state(at) == ACTIVE

    def invalid_at(self, at: datetime) -> bool:
        return any(a <= at < b for a, b, _ in self.invalid)

    def invalid_form(self, at: datetime) -> str:
        """The conclusion of a run created in an invalid window (see STARTUP_FAILURE_FROM)."""
        start = next(a for a, b, _ in self.invalid if a <= at < b)
        return "startup_failure" if start >= STARTUP_FAILURE_FROM else "failure"

    def jobs_at(self, at: datetime) -> list[JobSpec]:
        return [job for job in self.jobs if job.exists(at)]

    def broken_step(self, job_id: str, at: datetime) -> str | None:
        return next((k for a, b, j, k in self.broken_steps if j == job_id and a <= at < b), None)


@dataclass(frozen=True)
class RateChange:
    """A failure-rate contribution: a regime (flat between two times) or a decaying burst."""

    kind: str
    tags: frozenset[str]
    category: str
    start: datetime
    end: datetime
    rate: float
    decays: bool
    why: str

    def applies(self, job: JobSpec, at: datetime) -> bool:
        return job.kind == self.kind and self.tags <= job.tags and self.start <= at < self.end

    def value(self, at: datetime) -> float:
        if not self.decays:
            return self.rate
        share = (at - self.start) / (self.end - self.start)
        return self.rate * (1.0 - share)


@dataclass(frozen=True)
class IncidentSpec:
    """A simulated incident: from `start` to `end`, every job in its scope (its job kinds, on
    its accelerator or runner label) that starts then fails with `category` and prints
    `message`. A host incident hits only the `share` of its pool's jobs sent to the one host
    `runner_name`; the others run as usual."""

    kind: str  # host | hub | image
    start: datetime
    end: datetime
    category: str
    label: str
    why: str
    message: str
    job_kinds: frozenset[str]
    accelerator: str | None = None  # gpu | npu: the workflows it hits
    runner_label: str | None = None
    runner_name: str | None = None
    share: float = 1.0

    def scope(self, workflow: WorkflowSpec, job: JobSpec, label: str, started: datetime) -> bool:
        """Whether a job of this kind, pool and start time is exposed to the incident."""
        return (
            self.start <= started < self.end
            and job.kind in self.job_kinds
            and self.accelerator in (None, workflow.accelerator)
            and self.runner_label in (None, label)
        )


@dataclass(frozen=True)
class Catalog:
    """Everything the simulation reads from the data file."""

    repository: dict[str, Any]
    start: datetime
    traffic: dict[str, Any]
    reruns: dict[str, float]
    rerun_pass: dict[str, float]
    workflows: tuple[WorkflowSpec, ...]
    base_rates: dict[str, dict[str, float]]
    changes: tuple[RateChange, ...]
    events: tuple[dict[str, Any], ...]
    stream: str | None = None  # None: the seed alone (verl); else "<stream>:<seed>"
    ids: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_IDS))
    incidents: tuple[IncidentSpec, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.repository['owner']}/{self.repository['name']}"

    @property
    def description(self) -> str:
        return str(self.repository.get("description", DEFAULT_DESCRIPTION))


def _job(raw: dict[str, Any]) -> JobSpec:
    kind = raw["kind"]
    default_runner = "ubuntu-latest" if kind in ("setup", "cleanup") else "L20x8"
    return JobSpec(
        id=raw["id"],
        name=raw.get("name", raw["id"]),
        kind=kind,
        tags=frozenset(raw.get("tags", ())) | {kind},
        algo=raw.get("algo", ""),
        strategy=raw.get("strategy", ""),
        timeouts=raw.get("timeout", [["2000-01-01", 360]]),
        minutes=tuple(raw.get("minutes", [0.6, 2.5])),  # type: ignore[arg-type]
        runners=raw.get("runners", [["2000-01-01", default_runner]]),
        start=parse_time(raw.get("from")),
        end=parse_time(raw.get("to"), FAR_FUTURE),
        needs_from=parse_time(raw.get("needs_from"), FAR_FUTURE),
        absent=tuple((parse_time(a), parse_time(b)) for a, b in raw.get("absent", ())),
    )


def _workflow(raw: dict[str, Any]) -> WorkflowSpec:
    npu = all(job["kind"] == "npu_test" for job in raw["jobs"])
    return WorkflowSpec(
        id=raw["id"],
        path=raw["path"],
        name=raw["name"],
        family=raw["family"],
        accelerator="npu" if npu else "gpu",
        push_share=raw.get("push_share", 0.0),
        pr_share=raw.get("pr_share", 0.0),
        present=tuple((parse_time(a), parse_time(b, FAR_FUTURE)) for a, b in raw["present"]),
        invalid=tuple((parse_time(a), parse_time(b), why) for a, b, why in raw["invalid"]),
        jobs=tuple(_job(job) for job in raw["jobs"]),
        broken_steps=tuple(
            (parse_time(a), parse_time(b), job, kind)
            for a, b, job, kind in raw.get("broken_steps", ())
        ),
        events=tuple(raw.get("on", PUSH_AND_PR)),
        schedule=tuple(CronEntry(e["cron"], e.get("timezone")) for e in raw.get("schedule", ())),
        schedule_until=parse_time(raw.get("schedule_until"), FAR_FUTURE),
        states=tuple((parse_time(t), state) for t, state in raw.get("states", ()))
        or ((FAR_PAST, ACTIVE),),
    )


def _incident(raw: dict[str, Any]) -> IncidentSpec:
    scope = raw["scope"]
    return IncidentSpec(
        kind=raw["kind"],
        start=parse_time(raw["from"]),
        end=parse_time(raw["to"]),
        category=raw["category"],
        label=raw["label"],
        why=raw["why"],
        message=raw["message"],
        job_kinds=frozenset(scope["job_kinds"]),
        accelerator=scope.get("accelerator"),
        runner_label=scope.get("runner_label"),
        runner_name=scope.get("runner_name"),
        share=scope.get("share", 1.0),
    )


def _regime(raw: dict[str, Any]) -> RateChange:
    return RateChange(
        kind=raw["kind"],
        tags=frozenset(raw["tags"]),
        category=raw["category"],
        start=parse_time(raw["from"]),
        end=parse_time(raw["to"], FAR_FUTURE),
        rate=raw["rate"],
        decays=False,
        why=raw["why"],
    )


def _burst(raw: dict[str, Any]) -> RateChange:
    start = parse_time(raw["at"])
    return RateChange(
        kind=raw["kind"],
        tags=frozenset(raw["tags"]),
        category=raw["category"],
        start=start,
        end=start + timedelta(days=raw["days"]),
        rate=raw["peak"],
        decays=True,
        why=raw["event"],
    )


class UnknownRepository(ValueError):
    """A repository fakehub has no simulated history of."""


def known(repo: str) -> bool:
    return repo.lower() in CATALOGS


def load(repo: str = VERL) -> Catalog:
    """The catalog of one repository ("owner/name", any case; verl's by default), parsed
    once per process."""
    if not known(repo):
        raise UnknownRepository(f"fakehub simulates {', '.join(CATALOGS)}, not {repo}")
    return _load(CATALOGS[repo.lower()])


@cache
def _load(file: str) -> Catalog:
    raw = json.loads((DATA_DIR / file).read_text())
    return Catalog(
        repository=raw["repository"],
        start=parse_time(raw["start"]),
        traffic=raw["traffic"],
        reruns=raw["reruns"],
        rerun_pass=raw["rerun_pass"],
        workflows=tuple(_workflow(w) for w in raw["workflows"]),
        base_rates={entry["kind"]: entry["rates"] for entry in raw["base_rates"]},
        changes=tuple(_regime(r) for r in raw["regimes"]) + tuple(_burst(b) for b in raw["bursts"]),
        events=tuple(raw["events"]),
        stream=raw.get("stream"),
        ids={**DEFAULT_IDS, **raw.get("ids", {})},
        incidents=tuple(_incident(i) for i in raw.get("incidents", ())),
    )
