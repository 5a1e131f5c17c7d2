"""API cost and speed of a full backfill of the scale-1 simulated history, and the cost of a
collect with nothing new (``python -m bench.run collector``)."""

from __future__ import annotations

import cProfile
import math
import pstats
import resource
import time
from pathlib import Path

import fakehub
from tests.hubtools import collect, migrated

SCALE = 1.0
SCALE1_DB = Path(__file__).with_name("out") / "scale1.db"  # reused by bench.dashboard
COMMAND = "python -m bench.run collector"
OUR_PACKAGES = ("/collector/", "/store/", "/ciflake/")


def _lower_bound(hub: fakehub.Hub, inventory: dict) -> int:
    """List pages + one jobs call per run + one log call per failed job that ran + one
    annotations call per job that failed, timed out, or was cancelled after it started."""
    pages = sum(math.ceil(w["runs"] / 100) for w in inventory["by_workflow"].values())
    failed = len(hub.admin("GET", "truth?log_status=missing")["failures"])
    noted = sum(
        job.conclusion in ("failure", "timed_out") or (job.conclusion == "cancelled" and job.ran)
        for job in hub.history().job_by_id.values()
    )
    return pages + inventory["runs"] + inventory["failed_jobs"] - failed + noted


def _own_share(profile: cProfile.Profile) -> float:
    """Share of the collect's wall time spent in our own code (tottime of our modules), the
    rest being PyGithub, requests, SQLAlchemy, the classifier's Hyperscan and waiting."""
    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())
    ours = sum(
        row[2]
        for (path, _line, _name), row in stats.stats.items()
        if any(part in path for part in OUR_PACKAGES)
    )
    return ours / total if total else 0.0


def _fresh(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    return f"sqlite:///{path}"


def build_scale1(path: Path) -> None:
    """The scale-1 database alone, for benchmarks that need one."""
    with fakehub.running(seed=1, scale=SCALE, rate_limit=1_000_000) as hub:
        collect(hub, _fresh(path))


def measure() -> list[dict]:
    with fakehub.running(seed=1, scale=SCALE, rate_limit=1_000_000) as hub:
        db_url = _fresh(SCALE1_DB)
        inventory = hub.admin("GET", "inventory")
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        report = collect(hub, db_url)
        profile.disable()
        elapsed = time.perf_counter() - started
        counters = hub.admin("GET", "counters")
        bound = _lower_bound(hub, inventory)
        hub.admin("POST", "counters/reset")
        collect(hub, db_url)
        again = hub.admin("GET", "counters")
        migrated(db_url).dispose()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ratio = counters["counted"] / bound
    share = _own_share(profile)
    return [
        {
            "figure": "API requests per run, full backfill at scale 1 (vs lower bound)",
            "value": f"{counters['counted'] / inventory['runs']:.3f} "
            f"({counters['counted']} / {bound} = {ratio:.3f}x)",
            "target": "<= 1.05x the bound",
            "met": ratio <= 1.05,
            "command": COMMAND,
            "note": "" if ratio <= 1.05 else "extra list pages from window splits and priming",
        },
        {
            "figure": "Rate-limited requests of a collect with nothing new",
            "value": f"{again['counted']} ({again['not_modified']} answered 304)",
            "target": "0",
            "met": again["counted"] == 0,
            "command": COMMAND,
            "note": "",
        },
        {
            "figure": "Backfill speed at scale 1 (runs/s, jobs/s)",
            "value": f"{report.runs_new / elapsed:.0f} runs/s, {report.jobs / elapsed:.0f} jobs/s "
            f"({elapsed:.0f} s, fakehub in the same process)",
            "target": "-",
            "met": None,
            "command": COMMAND,
            "note": "",
        },
        {
            "figure": "Share of backfill time in our own code (profile)",
            "value": f"{share:.0%}",
            "target": "<= 33%",
            "met": share <= 1 / 3,
            "command": COMMAND,
            "note": "profiled in one process with fakehub's own threads, which cProfile does not "
            "see; the share is of the collecting thread",
        },
        {
            "figure": "Peak RSS of the benchmark process (collect + in-process fakehub)",
            "value": f"{peak_mb:.0f} MB",
            "target": "-",
            "met": None,
            "command": COMMAND,
            "note": "",
        },
    ]
