"""What fakehub's simulated history really does, for the tests that judge our analytics on it:
the dates its failure process changes, per lineage, and each run's probability of a red first
attempt."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from fakehub.catalog import FAR_FUTURE, FAR_PAST, JobSpec, RateChange, WorkflowSpec, load
from fakehub.failures import MAX_FAILURE
from fakehub.history import History
from store.settings import Config

TOLERANCE = pd.Timedelta(days=3)
LINEAGE = "e2e_v1_separate_async"  # fully_async and one_step_off, now v1 separate_async
# The biggest shift of LINEAGE: the FSDP2 OOM regime that #6649 ends (2026-06-08) with the two
# invalid windows of e2e_fully_async_policy.yml around it, from #6568 to #6823 and the end of
# #6823's two-day fsdp2 burst. Its true dates are the lineage's true dates in this span.
BIG_SHIFT = (pd.Timestamp("2026-06-03T07:51:40Z"), pd.Timestamp("2026-06-26T08:51:50Z"))
# How much the simulated red rate of a lineage's runs must move across a changepoint, in the
# direction found, for it to be a real shift (expected_shift: means 7 days either side).
MIN_SHIFT = 0.05


def _spans(workflow: WorkflowSpec, job: JobSpec) -> list[tuple[datetime, datetime]]:
    """When the job runs: its own life, minus its absences, within the workflow's presence."""
    out = []
    for a, b in workflow.present:
        lo, hi = max(a, job.start), min(b, job.end)
        cuts = sorted(t for gap in job.absent for t in gap if lo < t < hi)
        points = [lo, *cuts, hi]
        out += [
            (x, y)
            for x, y in zip(points, points[1:], strict=False)
            if x < y and job.exists(x + (y - x) / 2)
        ]
    return out


def _touches(change: RateChange, job: JobSpec, spans: list[tuple[datetime, datetime]]) -> bool:
    """Whether the change ever applies to the job while the job runs (RateChange.applies at the
    first moment both hold)."""
    return any(
        max(a, change.start) < min(b, change.end) and change.applies(job, max(a, change.start))
        for a, b in spans
    )


def true_change_dates(config: Config) -> pd.DataFrame:
    """Per lineage (lineage, date, why): the moments the simulation changes that lineage's
    failure process, the probability that a run's first attempt is red.

    fakehub draws each job's failure from its kind's base rates plus every regime and burst
    that applies to it (``RateChange.applies``: same kind, tags a subset of the job's, inside
    the change's window); a run is red if any job fails, or always when its workflow file is
    invalid or a step is broken. A lineage's rate is the mix of its workflows' runs. So its
    true dates are:

    - the start and end of every regime that applies to one of its jobs while the job runs;
    - the start and end of every such burst. Bursts are short (2-7 days) and decay linearly,
      but they are real changes, often the biggest: the 2025-11-06 image burst (+0.3 per GPU
      job) lifts this lineage's red rate from ~0.36 to ~0.74. A changepoint at a burst is a
      correct detection, so bursts belong to the truth set for precision; recall is asked only
      of the big June shift, since a burst carries too few runs at test scales to demand it;
    - the boundaries of its workflows' invalid windows and broken steps (every run red);
    - its workflows' presence boundaries (the mix changes) and its jobs' from/to and absences
      (a run with one more job fails more often).

    Left out because they do not change the red probability: runner labels (failures do not
    depend on the runner), timeouts (they only bound durations), ``needs`` edges (a Megatron
    job skipped after a failed fsdp2 job leaves the run red either way), traffic (weekday and
    weekend factors scale every workflow alike) and events that are none of the above.
    """
    catalog = load()
    lineage_of = {w.path: w.lineage for w in config.project().workflows}
    rows: list[tuple[str, datetime, str]] = []
    for workflow in catalog.workflows:
        lineage = lineage_of[workflow.path]
        rows += [
            (lineage, t, f"{workflow.path} present") for span in workflow.present for t in span
        ]
        rows += [(lineage, t, f"invalid: {why}") for a, b, why in workflow.invalid for t in (a, b)]
        rows += [
            (lineage, t, f"broken {kind} step in {job}")
            for a, b, job, kind in workflow.broken_steps
            for t in (a, b)
        ]
        for job in workflow.jobs:
            rows += [(lineage, t, f"job {job.id} from/to") for t in (job.start, job.end)]
            rows += [(lineage, t, f"job {job.id} absent") for gap in job.absent for t in gap]
            spans = _spans(workflow, job)
            for change in catalog.changes:
                if _touches(change, job, spans):
                    kind = "burst" if change.decays else "regime"
                    why = f"{kind} {change.category}: {change.why}"
                    rows += [(lineage, t, why) for t in (change.start, change.end)]
    frame = pd.DataFrame(rows, columns=["lineage", "date", "why"])
    frame = frame[(frame["date"] > FAR_PAST) & (frame["date"] < FAR_FUTURE)]
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    frame = frame.groupby(["lineage", "date"], as_index=False).agg(
        why=("why", lambda whys: "; ".join(dict.fromkeys(whys)))
    )
    return frame.sort_values(["lineage", "date"], ignore_index=True)


def with_nearest(found: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """``found`` with the nearest true date of its lineage: true_date, why, distance_days."""
    pairs = found.reset_index(names="cp").merge(
        truth.rename(columns={"date": "true_date"}), on="lineage"
    )
    pairs["distance_days"] = (pairs["date"] - pairs["true_date"]).dt.total_seconds() / 86400
    nearest = pairs.loc[pairs["distance_days"].abs().groupby(pairs["cp"]).idxmin()]
    return found.join(nearest.set_index("cp")[["true_date", "why", "distance_days"]])


def near(when: pd.Series, dates: pd.Series) -> pd.Series:
    """Whether each of ``when`` lies within TOLERANCE of one of ``dates``."""
    return when.map(lambda d: bool((dates - d).abs().min() <= TOLERANCE))


def expected_red(history: History) -> pd.DataFrame:
    """Per run (run_id, expected_red): the probability that its first attempt is red, from
    fakehub's own failure model: 1 when the workflow file is invalid or a step of a job is
    broken, else the chance that not every job of the first attempt passes (a job skipped after
    a failed one leaves the run red either way, so every listed job must pass)."""
    rows = []
    for run in history.runs:
        jobs = run.attempts[0].jobs
        if run.invalid or any(run.workflow.broken_step(j.spec.id, run.created_at) for j in jobs):
            rows.append((run.id, 1.0))
            continue
        green = 1.0
        for job in jobs:
            rates = history.failures.rates(job.spec, run.created_at)
            green *= 1 - min(sum(rates.values()), MAX_FAILURE)
        rows.append((run.id, 1 - green))
    return pd.DataFrame(rows, columns=["run_id", "expected_red"])


def expected_shift(runs: pd.DataFrame, lineage: str, date: pd.Timestamp, days: int = 7):
    """(before, after): the mean expected_red of ``lineage``'s counted runs (``runs``: logical
    runs with expected_red) in the ``days`` days before ``date`` and from it on."""
    mine = runs[(runs["lineage"] == lineage) & (runs["logical_outcome"] != "excluded")]
    window = pd.Timedelta(days=days)
    before = mine[(mine["created_at"] >= date - window) & (mine["created_at"] < date)]
    after = mine[(mine["created_at"] >= date) & (mine["created_at"] < date + window)]
    return before["expected_red"].mean(), after["expected_red"].mean()
