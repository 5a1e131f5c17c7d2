"""Incidents found on fakehub's histories against what fakehub simulated (fakehub.catalog's
incidents): every simulated incident found with its cause and its time span within an hour of
the span of the jobs the simulation failed (``Job.incident``), and none where none was
simulated. Reads the demo's database, collected once per session through the collector, which
keeps the incidents (the demo's window covers every simulated incident)."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
from sqlalchemy import Engine, select

from ciflake.demo import DEMO_PR_SCALE, DEMO_SCALE, DEMO_SEED
from fakehub.catalog import IncidentSpec, load
from fakehub.history import DEFAULT_END, History
from store.engine import make_engine
from store.incidents import load_incidents, load_members
from store.models import Failure
from store.runfilter import RunFilter

REPOSITORIES = ("verl-project/verl", "verl-project/verl-recipe")
WITHIN = timedelta(hours=1)


def _lines(engine: Engine, repo: str) -> dict[str, set[str]]:
    """Each incident's deciding lines: those of its failures."""
    members = load_members(engine, RunFilter(repo=repo))
    with engine.connect() as conn:
        rows = conn.execute(
            select(Failure.run_id, Failure.run_attempt, Failure.job_id, Failure.line)
        )
        lines = pd.DataFrame(rows.all(), columns=["run_id", "run_attempt", "job_id", "line"])
    joined = members.merge(lines, on=["run_id", "run_attempt", "job_id"])
    return {key: set(group["line"].dropna()) for key, group in joined.groupby("incident_id")}


def _same_cause(spec: IncidentSpec, found: pd.Series, lines: set[str]) -> bool:
    """The stored cause is the simulated one: the stuck host for a host incident, the one
    message every failure prints (their signature) for the others."""
    if found["category"] != spec.category:
        return False
    if spec.kind == "host":
        return bool(found["kind"] == "runner" and found["runner"] == spec.runner_name)
    return bool(found["kind"] == "signature" and lines and all(spec.message in x for x in lines))


Span = tuple[pd.Timestamp, pd.Timestamp]


def _footprints(repo: str) -> dict[IncidentSpec, Span]:
    """Each simulated incident's span as its jobs show it, in the demo's history: from the
    start of the first job it failed to the start of the last (the incident's own bounds can
    lie where no job ran)."""
    history = History(DEMO_SEED, DEMO_SCALE, DEFAULT_END, load(repo), DEMO_PR_SCALE)
    starts: dict[IncidentSpec, list[pd.Timestamp]] = {}
    for run in history.runs:
        for attempt in run.attempts:
            for job in attempt.jobs:
                if job.incident is not None:
                    starts.setdefault(job.incident, []).append(pd.Timestamp(job.started_at))
    return {spec: (min(times), max(times)) for spec, times in starts.items()}


def _matches(spec: IncidentSpec, span: Span, found: pd.Series, lines: set[str]) -> bool:
    """The cause, and a span within an hour of the jobs' and inside the simulated bounds (an
    hour's slack either side)."""
    return (
        _same_cause(spec, found, lines)
        and abs(found["started_at"] - span[0]) <= WITHIN
        and abs(found["ended_at"] - span[1]) <= WITHIN
        and found["started_at"] >= spec.start - WITHIN
        and found["ended_at"] <= spec.end + WITHIN
    )


def test_every_simulated_incident_is_found_and_none_else(demo_db: str) -> None:
    engine = make_engine(demo_db, read_only=True)
    simulated = found = matched_simulated = matched_found = 0
    for repo in REPOSITORIES:
        truth = load(repo).incidents
        spans = _footprints(repo)
        assert set(spans) == set(truth)  # every simulated incident failed jobs of the demo
        stored = load_incidents(engine, repo)
        lines = _lines(engine, repo)
        hits = [
            [
                _matches(spec, spans[spec], row, lines.get(row["id"], set()))
                for _, row in stored.iterrows()
            ]
            for spec in truth
        ]
        simulated += len(truth)
        found += len(stored)
        matched_simulated += sum(any(row) for row in hits)
        matched_found += sum(any(col) for col in zip(*hits, strict=True)) if hits else 0
        missed = [spec.label for spec, row in zip(truth, hits, strict=True) if not any(row)]
        assert not missed, (repo, missed, stored.drop(columns=["id", "repo"]).to_dict("records"))
    engine.dispose()
    recall, precision = matched_simulated / simulated, matched_found / found
    assert simulated == 3  # verl's host, Hub and image incidents; none in the recipe
    assert (precision, recall) == (1.0, 1.0), (found, matched_found)
