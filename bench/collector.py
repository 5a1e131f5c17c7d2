"""API cost and speed of a full backfill of the scale-1 simulated history, the cost of a
collect with nothing new, and the peak memory of collecting a 1 GB log
(``python -m bench.run collector``)."""

from __future__ import annotations

import cProfile
import math
import pstats
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import fakehub
from bench.memory import PEAK_KB
from tests.support.hubtools import SINCE, TEST_SCALE, collect, migrated

SCALE = 1.0
SCALE1_DB = Path(__file__).with_name("out") / "scale1.db"  # reused by bench.dashboard
COMMAND = "python -m bench.run collector"
# what the collector keeps beside the raw rows: the derived rows and their rollups
DERIVED_TABLES = (
    "logical_jobs",
    "logical_runs",
    "rollup_jobs",
    "rollup_runs",
    "rollup_job_names",
)
OUR_PACKAGES = ("/collector/", "/store/", "/ciflake/")
BIG_LOG_MB = 1024
BIG_LOG_DB = Path(__file__).with_name("out") / "big-log.db"
BIG_LOG_RSS_TARGET_MB = 200
# A whole collect in a fresh interpreter (fakehub stays in the benchmark's process): its peak
# RSS is the collector's alone.
BIG_LOG_SCRIPT = PEAK_KB + (
    "import sys, time\n"
    "from collector import lazy\n"
    "lazy.lean_pandas()  # as ciflake collect does\n"
    "from datetime import datetime\n"
    "from store.settings import load_config\n"
    "from collector.once import collect_once\n"
    "from collector.sync_report import CollectOptions\n"
    "from tests.support.hubtools import migrated\n"
    "api, token, db, since = sys.argv[1:]\n"
    "config = load_config(env={'GITHUB_TOKEN': token}, api_url=api, db_url=db)\n"
    "options = CollectOptions(since=datetime.fromisoformat(since), quiet=True)\n"
    "t = time.perf_counter(); report = collect_once(config, migrated(db), options)\n"
    "print(time.perf_counter() - t, peak_kb(),\n"
    "      report.logs_fetched, report.log_errors)"
)


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


def big_log_rss() -> dict:
    """Peak RSS of a collect (test scale) one of whose failed jobs has a 1 GB log, which
    fakehub streams: the collector must stream it too, into the database."""
    with fakehub.running(seed=1, scale=TEST_SCALE, rate_limit=1_000_000) as hub:
        failures = hub.admin("GET", "truth?log_status=ok")["failures"]
        job_id = next(f["job_id"] for f in failures if f["conclusion"] == "failure")
        hub.admin("POST", "big_log", {"job_id": job_id, "megabytes": BIG_LOG_MB})
        db_url = _fresh(BIG_LOG_DB)
        command = [sys.executable, "-c", BIG_LOG_SCRIPT, hub.base_url, hub.token, db_url]
        done = subprocess.run(
            [*command, SINCE.isoformat()],
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
            check=True,
        )
    seconds, rss_kb, fetched, errors = done.stdout.split()
    rss_mb = int(rss_kb) / 1024
    stored_mb = BIG_LOG_DB.stat().st_size / 2**20
    met = rss_mb < BIG_LOG_RSS_TARGET_MB and errors == "0"
    for leftover in BIG_LOG_DB.parent.glob(BIG_LOG_DB.name + "*"):
        leftover.unlink()  # about a quarter of a gigabyte, of no further use
    return {
        "figure": "Peak RSS collecting a 1 GB log",
        "value": f"{rss_mb:.0f} MB",
        "target": f"< {BIG_LOG_RSS_TARGET_MB} MB",
        "met": met,
        "command": COMMAND,
        "note": f"a collect at test scale ({fetched} logs, {errors} errors) in a fresh "
        f"interpreter, one log of {BIG_LOG_MB} MB streamed by fakehub; {float(seconds):.0f} s, "
        f"database {stored_mb:.0f} MB",
    }


@contextmanager
def _timed_refreshes(name: str = "refresh") -> Iterator[list[float]]:
    """The seconds of each call of ``analytics.derived``'s function ``name`` meanwhile."""
    from analytics import derived

    spent: list[float] = []
    original: Callable[..., Any] = getattr(derived, name)

    def timed(*args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    setattr(derived, name, timed)
    try:
        yield spent
    finally:
        setattr(derived, name, original)


def _size_without_derived(path: Path) -> tuple[float, float]:
    """(MB of the database as collected, MB of a copy without the derived rows), both after
    VACUUM so that free pages count in neither."""
    with tempfile.TemporaryDirectory() as tmp:
        sizes = []
        for drop in (False, True):
            copy = Path(tmp) / f"copy-{drop}.db"
            shutil.copyfile(path, copy)
            with sqlite3.connect(copy) as conn:
                if drop:
                    for table in DERIVED_TABLES:
                        conn.execute(f"DELETE FROM {table}")
                conn.commit()
                conn.execute("VACUUM")
            sizes.append(copy.stat().st_size / 2**20)
    return sizes[0], sizes[1]


def _derived_cost(elapsed: float, refreshes: list[float], incidents: list[float]) -> list[dict]:
    """What keeping the derived tables costs a backfill: time in their refreshes against the
    rest of the backfill (the logical rows, then the incidents), and the database's size with
    and without their rows."""
    spent, detecting = sum(refreshes), sum(incidents)
    added = spent / (elapsed - spent)
    more = detecting / (elapsed - detecting)
    with_rows, without = _size_without_derived(SCALE1_DB)
    grown = with_rows / without - 1
    return [
        {
            "figure": "Derived tables: time added to a scale-1 backfill",
            "value": f"{added:.1%} ({spent:.1f} s in {len(refreshes)} batch refreshes, "
            f"{elapsed:.0f} s in all)",
            "target": "<= 10%",
            "met": added <= 0.10,
            "command": COMMAND,
            "note": "analytics.derived.refresh timed inside the backfill above (profiled, "
            "fakehub in the same process), against the backfill's time without it",
        },
        {
            "figure": "Incidents: time added to a scale-1 backfill",
            "value": f"{more:.1%} ({detecting:.1f} s in {len(incidents)} recomputations, "
            f"{elapsed:.0f} s in all)",
            "target": "<= 10%",
            "met": more <= 0.10,
            "command": COMMAND,
            "note": "analytics.derived.refresh_incidents timed inside the backfill above, "
            "against the backfill's time without it",
        },
        {
            "figure": "Derived tables: database size added at scale 1",
            "value": f"{grown:.1%} ({with_rows:.0f} MB vs {without:.0f} MB without their rows)",
            "target": "<= 30%",
            "met": grown <= 0.30,
            "command": COMMAND,
            "note": "both sizes after VACUUM; logs archived compressed count in both",
        },
    ]


def measure() -> list[dict]:
    big_log = big_log_rss()
    with fakehub.running(seed=1, scale=SCALE, rate_limit=1_000_000) as hub:
        db_url = _fresh(SCALE1_DB)
        inventory = hub.admin("GET", "inventory")
        profile = cProfile.Profile()
        started = time.perf_counter()
        with _timed_refreshes() as refreshes, _timed_refreshes("refresh_incidents") as incidents:
            profile.enable()
            report = collect(hub, db_url)
            profile.disable()
        elapsed = time.perf_counter() - started
        counters = hub.admin("GET", "counters")
        bound = _lower_bound(hub, inventory)
        hub.admin("POST", "counters/reset")
        collect(hub, db_url)
        again = hub.admin("GET", "counters")
        # the next night's workflow GITHUB_TOKEN: ETags are specific to the token
        hub.admin("POST", "token", {"token": "next-nights-github-token"})
        hub.token = "next-nights-github-token"
        hub.admin("POST", "counters/reset")
        collect(hub, db_url)
        new_token = hub.admin("GET", "counters")
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
            "figure": "Rate-limited requests of a collect with nothing new, under a new token "
            "(a workflow's GITHUB_TOKEN, new every night)",
            "value": f"{new_token['counted']} ({new_token['not_modified']} answered 304; "
            + ", ".join(f"{k} {v}" for k, v in new_token["by_route"].items())
            + ")",
            "target": "the listings only",
            "met": set(new_token["by_route"]) <= {"workflows", "workflow_runs"},
            "command": COMMAND,
            "note": "ETags are specific to the token, so no answer is a 304: the collect lists "
            "the workflows and each workflow's trailing window, and asks for nothing else",
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
        *_derived_cost(elapsed, refreshes, incidents),
        big_log,
    ]
