"""How the changepoint search does across fakehub seeds, without a collect: ``python -m
tests.changepoint_seeds [--seeds 1-16] [--scale 0.3]``.

The acceptance test collects one seed through PyGithub (a minute each); this reads fakehub's
History directly (the runs, attempts and first-attempt jobs a collect would store, a few seconds
a seed) and searches each lineage's series twice, with the job set changes as known days (what
the dashboard does) and freely. It prints every changepoint's distance to the nearest true
change date (tests.test_analytics_acceptance.true_change_dates), then per search how many land
more than 3 days off and on how many seeds the big June drop of e2e_v1_separate_async is found.
"""

from __future__ import annotations

import argparse

import pandas as pd

from analytics.changepoints import changepoints, daily_failures, job_set_changes
from analytics.outcomes import attach_lineage, logical_runs
from analytics.setup import workflow_table
from ciflake.config import Config, load_config
from fakehub.history import DEFAULT_END, History
from tests.test_analytics_acceptance import (
    BIG_SHIFT,
    LINEAGE,
    TOLERANCE,
    _near,
    _with_nearest,
    true_change_dates,
)


def stored_frames(history: History, config: Config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(logical runs with lineage, daily job presence) as a full collect would store them."""
    runs, attempts, jobs = [], [], []
    for run in history.runs:
        created = pd.Timestamp(run.created_at)
        runs.append((run.id, run.workflow.path, created, len(run.attempts), run.latest.conclusion))
        attempts += [(run.id, a.number, a.conclusion) for a in run.attempts]
        jobs += [(run.workflow.path, created.floor("D"), j.spec.name) for j in run.attempts[0].jobs]
    frame = pd.DataFrame(
        runs, columns=["run_id", "workflow_path", "created_at", "run_attempt", "conclusion"]
    )
    attempt_frame = pd.DataFrame(attempts, columns=["run_id", "attempt", "conclusion"])
    logical = attach_lineage(logical_runs(frame, attempt_frame), workflow_table(config.workflows))
    presence = pd.DataFrame(jobs, columns=["workflow_path", "day", "name"])
    presence = presence.groupby(["workflow_path", "day", "name"]).size().rename("runs")
    return logical, presence.reset_index()


def search(seed: int, scale: float, config: Config, truth: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per search ("known", "free"): the changepoints with their nearest true date."""
    runs, presence = stored_frames(History(seed, scale, DEFAULT_END), config)
    daily = daily_failures(runs)
    days = runs.assign(day=runs["created_at"].dt.floor("D"))
    run_days = days.groupby(["workflow_path", "day"]).size().rename("runs").reset_index()
    lineage_of = runs.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"]
    known = job_set_changes(presence, run_days, lineage_of, config.job_name_strip)
    return {
        "known": _with_nearest(changepoints(daily, known=known), truth),
        "free": _with_nearest(changepoints(daily), truth),
    }


def _seeds(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-16", help="a seed or a range, e.g. 1-16")
    parser.add_argument("--scale", type=float, default=0.3)
    args = parser.parse_args()
    config = load_config()
    truth = true_change_dates(config)
    lo, hi = BIG_SHIFT[0] - TOLERANCE, BIG_SHIFT[1] + TOLERANCE
    off, found, june = {"known": 0, "free": 0}, {"known": 0, "free": 0}, {"known": 0, "free": 0}
    for seed in _seeds(args.seeds):
        for name, points in search(seed, args.scale, config, truth).items():
            far = ~_near(points["date"], points["true_date"])
            off[name] += int(far.sum())
            found[name] += len(points)
            mine = points[points["lineage"] == LINEAGE]
            drop = mine[(mine["date"] >= lo) & (mine["date"] <= hi)]
            june[name] += bool((drop["after_rate"] < drop["before_rate"]).any())
            distances = points.groupby("lineage")["distance_days"].agg(
                lambda d: " ".join(f"{x:+.1f}" for x in d)
            )
            print(f"seed {seed} {name}: " + "; ".join(f"{k} {v}" for k, v in distances.items()))
    seeds = len(_seeds(args.seeds))
    for name in ("known", "free"):
        print(
            f"{name}: {found[name]} changepoints, {off[name]} more than 3 days from a true change;"
            f" the June drop of {LINEAGE} found on {june[name]} of {seeds} seeds"
        )


if __name__ == "__main__":
    main()
