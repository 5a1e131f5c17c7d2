"""How the changepoint search does across fakehub seeds, without a collect: ``python -m
tests.support.changepoint_seeds [--seeds 1-16] [--scale 0.3] [--known-share 0.5]``.

The acceptance test collects one seed through PyGithub (a minute each); this reads fakehub's
History directly (the runs, attempts and first-attempt jobs a collect would store, a few seconds
a seed) and searches each lineage's series twice, with the job set changes as known days (what
the dashboard does) and freely. It prints every changepoint's distance to the nearest true
change date (tests.support.simulated_truth), then per search: how many land more than 3 days
off, how many are not a shift of the simulated red rate (its failure model's mean, 7 days
either side, moving less than MIN_SHIFT or the other way), and on how many seeds the big June
drop of e2e_v1_separate_async is found.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

import numpy as np
import pandas as pd

from analytics.changepoints import KNOWN_SHARE, changepoints, daily_failures, lineage_changepoints
from analytics.config_tables import workflow_table
from analytics.outcomes import attach_lineage, logical_runs
from fakehub.api import CHECKS_RETENTION_DAYS
from fakehub.history import DEFAULT_END, History
from fakehub.records import Attempt
from store.settings import Config, load_config
from tests.support.simulated_truth import (
    BIG_SHIFT,
    LINEAGE,
    MIN_SHIFT,
    TOLERANCE,
    expected_red,
    expected_shift,
    near,
    true_change_dates,
    with_nearest,
)


def _counted(attempt: Attempt, archived: bool) -> str | None:
    """The conclusion ciflake counts by (store.runfilter.conclusion): an attempt GitHub calls
    cancelled because a job hit its time limit is ``timed_out``, as far as its jobs show."""
    if attempt.conclusion == "cancelled" and attempt.red and not archived:
        return "timed_out"
    return attempt.conclusion


def stored_frames(history: History, config: Config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logical runs with lineage, daily job presence) as a full collect would store them and
    store.frame_queries would read them."""
    runs, attempts, jobs = [], [], []
    archived_before = history.now - timedelta(days=CHECKS_RETENTION_DAYS)  # no jobs served
    for run in history.runs:
        created = pd.Timestamp(run.created_at)
        archived = run.created_at < archived_before
        latest = _counted(run.latest, archived)
        runs.append((run.id, run.workflow.path, created, len(run.attempts), latest))
        # the collector learns of earlier attempts from the jobs: without jobs only the latest
        known = [run.latest] if archived else run.attempts
        attempts += [(run.id, a.number, _counted(a, archived)) for a in known]
        names = set() if archived else {job.spec.name for job in run.attempts[0].jobs}
        jobs += [(run.workflow.path, created.floor("D"), name) for name in names]
    frame = pd.DataFrame(
        runs, columns=["run_id", "workflow_path", "created_at", "run_attempt", "conclusion"]
    )
    attempt_frame = pd.DataFrame(attempts, columns=["run_id", "attempt", "conclusion"])
    logical = attach_lineage(
        logical_runs(frame, attempt_frame), workflow_table(config.project().workflows)
    )
    presence = pd.DataFrame(jobs, columns=["workflow_path", "day", "name"])
    presence = presence.groupby(["workflow_path", "day", "name"]).size().rename("runs")
    return logical, presence.reset_index()


def search(
    seed: int, scale: float, config: Config, truth: pd.DataFrame, known_share: float = KNOWN_SHARE
) -> dict[str, pd.DataFrame]:
    """Per search ("known", "free"): the changepoints with their nearest true date and the
    simulated red rate either side (expected_before, expected_after)."""
    history = History(seed, scale, DEFAULT_END)
    runs, presence = stored_frames(history, config)
    runs = runs.merge(expected_red(history), on="run_id")
    found = {
        "known": lineage_changepoints(runs, runs, presence, known_share=known_share),
        "free": changepoints(daily_failures(runs)),
    }
    out = {}
    for name, points in found.items():
        shifts = [expected_shift(runs, row.lineage, row.date) for row in points.itertuples()]
        out[name] = with_nearest(points, truth).assign(
            expected_before=[b for b, _ in shifts], expected_after=[a for _, a in shifts]
        )
    return out


def _seeds(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-16", help="a seed or a range, e.g. 1-16")
    parser.add_argument("--scale", type=float, default=0.3)
    parser.add_argument("--known-share", type=float, default=KNOWN_SHARE)
    args = parser.parse_args()
    config = load_config()
    truth = true_change_dates(config)
    lo, hi = BIG_SHIFT[0] - TOLERANCE, BIG_SHIFT[1] + TOLERANCE
    tally = {name: {"found": 0, "far": 0, "no shift": 0, "june": 0} for name in ("known", "free")}
    for seed in _seeds(args.seeds):
        for name, points in search(seed, args.scale, config, truth, args.known_share).items():
            counts = tally[name]
            counts["found"] += len(points)
            counts["far"] += int((~near(points["date"], points["true_date"])).sum())
            moved = points["expected_after"] - points["expected_before"]
            wrong_way = np.sign(moved) != np.sign(points["after_rate"] - points["before_rate"])
            counts["no shift"] += int(((moved.abs() < MIN_SHIFT) | wrong_way).sum())
            mine = points[points["lineage"] == LINEAGE]
            drop = mine[(mine["date"] >= lo) & (mine["date"] <= hi)]
            counts["june"] += bool((drop["after_rate"] < drop["before_rate"]).any())
            distances = points.groupby("lineage")["distance_days"].agg(
                lambda d: " ".join(f"{x:+.1f}" for x in d)
            )
            print(f"seed {seed} {name}: " + "; ".join(f"{k} {v}" for k, v in distances.items()))
    seeds = len(_seeds(args.seeds))
    for name, counts in tally.items():
        print(
            f"{name}: {counts['found']} changepoints, {counts['far']} more than 3 days from a"
            f" true change, {counts['no shift']} not a shift of the simulated rate; the June"
            f" drop of {LINEAGE} found on {counts['june']} of {seeds} seeds"
        )


if __name__ == "__main__":
    main()
