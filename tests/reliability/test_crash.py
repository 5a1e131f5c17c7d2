"""Crash suite: collects killed with SIGKILL at random points, then run again, end with the
database of one clean collect: batches commit atomically and the watermark moves only after its
batch. The derived tables agree with a fresh computation right after the kill (but for the
runs marked pending) and after the resume, which leaves none pending. The kill points are drawn
(seeded) across the clean collect's measured duration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from random import Random

import pytest

import fakehub
from analytics import derived
from store.settings import load_config
from tests.reliability.harness import (
    CANARY,
    SIZE,
    canary_hub,
    fast_collect,
    frozen,
    leaks,
    mismatched_tables,
    record,
)
from tests.support.hubtools import SINCE, TEST_SCALE, migrated

SUITE = "crash"
KILL_SEED = 20260812


def _collect_process(hub: fakehub.Hub, db_url: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "GITHUB_TOKEN": CANARY,
        "CIFLAKE_DB_URL": db_url,
        "CIFLAKE_API_URL": hub.base_url,
    }
    command = [sys.executable, "-m", "ciflake", "collect", "--once", "-q"]
    command += ["--since", SINCE.date().isoformat()]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _timed_clean_collect(hub: fakehub.Hub, db_url: str) -> float:
    started = time.monotonic()
    process = _collect_process(hub, db_url)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()
    return time.monotonic() - started


def _derived_state(db_url: str) -> tuple[dict[str, int], bool]:
    """(the derived tables' rows that differ from a fresh computation, pending runs aside;
    whether the tables are current: nothing pending) (analytics.derived)."""
    engine = migrated(db_url)
    try:
        config = load_config(env={}, db_url=db_url)
        differ = derived.differences(engine, config.project().repo, config.project())
        return differ, derived.is_current(
            engine, config.project().repo, config.project().job_name_strip
        )
    finally:
        engine.dispose()


@pytest.mark.slow
def test_killed_collects_resume_to_the_clean_database(tmp_path):
    """About 35 s: a timed clean collect, then a collect killed at a random moment and resumed,
    four times; each kill needs a collect of its own in a process of its own."""
    with canary_hub(seed=11, scale=TEST_SCALE) as hub:
        clean_url = f"sqlite:///{tmp_path / 'clean.db'}"
        duration = _timed_clean_collect(hub, clean_url)
        clean = frozen(migrated(clean_url))
        draws = Random(KILL_SEED)
        kills = trials = mismatches = crashes = leaked = 0
        while kills < SIZE.kills and trials < SIZE.kills + 5:
            trials += 1
            delay = draws.uniform(0.05, 0.9) * duration
            url = f"sqlite:///{tmp_path / f'killed{trials}.db'}"
            process = _collect_process(hub, url)
            time.sleep(delay)
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            out, err = process.communicate(timeout=60)
            leaked += leaks(out, err)
            if process.returncode not in (0, -signal.SIGKILL) or b"Traceback" in err:
                crashes += 1
            torn, _ = _derived_state(url)  # a kill between two writes would show here
            fast_collect(hub, url)  # resume
            after, current = _derived_state(url)
            torn.update({f"{table} after the resume": n for table, n in after.items()})
            assert current, "the resumed collect left runs pending"
            assert not torn, f"derived tables differ from a rebuild after a kill at {delay:.2f}s"
            wrong = mismatched_tables(clean, frozen(migrated(url)))
            mismatches += bool(wrong)
            assert not wrong, f"{wrong} differ after a kill at {delay:.2f}s of {duration:.2f}s"
        record(
            "crash",
            trials=trials,
            kills=kills,
            mismatches=mismatches,
            crashes=crashes,
            leaks=leaked,
        )
        assert crashes == leaked == 0
        assert kills >= SIZE.kills, f"only {kills} of {trials} collects were still running"
