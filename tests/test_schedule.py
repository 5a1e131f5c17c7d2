"""``ciflake schedule``: jobs never overlap, missed runs do not pile up, and SIGTERM in the
middle of a collect lets it finish and exits 0 with nothing lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

import pytest
from apscheduler.triggers.interval import IntervalTrigger

import fakehub
from ciflake.schedule import MISFIRE_GRACE_S, Triggers, build_scheduler, config_triggers
from store.settings import load_config
from tests.support.hubtools import TEST_SCALE, collect, migrated, snapshot


class Recorder:
    """A job body that takes ``seconds`` and records how many bodies ran at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.active = self.most_active = 0
        self.calls: dict[str, int] = {}

    def job(self, name: str):
        def run() -> None:
            with self.lock:
                self.active += 1
                self.most_active = max(self.most_active, self.active)
                self.calls[name] = self.calls.get(name, 0) + 1
            time.sleep(self.seconds)
            with self.lock:
                self.active -= 1

        return run


def test_jobs_never_overlap_and_missed_runs_coalesce():
    recorder = Recorder(seconds=0.3)
    fast = Triggers(IntervalTrigger(seconds=0.05), IntervalTrigger(seconds=0.13))
    scheduler = build_scheduler(recorder.job("collect"), recorder.job("summary"), fast)
    thread = threading.Thread(target=scheduler.start)
    thread.start()
    time.sleep(2.0)
    collect_job = scheduler.get_job("collect")  # job defaults apply once started
    assert collect_job.max_instances == 1 and collect_job.coalesce
    assert collect_job.misfire_grace_time == MISFIRE_GRACE_S
    scheduler.shutdown(wait=True)
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert recorder.most_active == 1
    # 2 s of 0.3 s jobs: a handful of runs, not one per 0.05 s tick (40) piling up
    assert 2 <= recorder.calls["collect"] <= 7, recorder.calls
    assert recorder.calls.get("summary", 0) >= 1


def test_config_triggers_follow_the_config():
    config = load_config(env={})
    triggers = config_triggers(config)
    now = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    assert triggers.summary.get_next_fire_time(None, now) == datetime(
        2026, 11, 30, 2, 30, tzinfo=UTC
    )
    assert triggers.collect.interval.total_seconds() == config.interval_minutes * 60


def _runs_stored(db_path) -> int:
    try:
        with sqlite3.connect(db_path, timeout=1) as conn:
            return conn.execute("select count(*) from workflow_runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _finished_collects(db_path) -> int:
    with sqlite3.connect(db_path, timeout=5) as conn:
        return conn.execute("select count(*) from sync_log where status = 'ok'").fetchone()[0]


@pytest.mark.slow
def test_sigterm_mid_collect_finishes_it_and_exits_zero(tmp_path):
    """About 20 s: a collect slowed on purpose until the signal lands mid-collect, then a
    follow-up collect and a clean one to compare with."""
    config_file = tmp_path / "ciflake.toml"
    config_file.write_text('[collect]\ninterval_minutes = 1\n[summary]\nnightly_at = "02:30"\n')
    db_path = tmp_path / "scheduled.db"
    with fakehub.running(seed=11, scale=TEST_SCALE, faults="slow=0.2:0.05") as hub:
        env = {
            **os.environ,
            "GITHUB_TOKEN": hub.token,
            "CIFLAKE_API_URL": hub.base_url,
            "CIFLAKE_DB_URL": f"sqlite:///{db_path}",
            "CIFLAKE_CONFIG": str(config_file),
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "ciflake", "schedule"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while _runs_stored(db_path) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _runs_stored(db_path) > 0, "the first collect stored nothing"
        assert _finished_collects(db_path) == 0, "the collect ended before the signal: slow it"
        process.send_signal(signal.SIGTERM)
        hub.admin("POST", "faults", {"spec": ""})  # the rest of the collect at full speed
        _, stderr = process.communicate(timeout=120)
        log = stderr.decode()
        assert process.returncode == 0, log
        assert "SIGTERM: letting the running job finish" in log
        assert "collect: verl-project/verl: runs " in log and "schedule: stopped" in log
        assert hub.token not in log
        assert _finished_collects(db_path) == 1  # the interrupted collect ran to its end

        collect(hub, f"sqlite:///{db_path}", since=None)  # a follow-up collect
        clean_url = f"sqlite:///{tmp_path / 'clean.db'}"
        collect(hub, clean_url, since=None)
    resumed, clean = snapshot(migrated(f"sqlite:///{db_path}")), snapshot(migrated(clean_url))
    for table, rows in clean.items():
        assert resumed[table] == rows, f"{table} differs from a clean collect"
