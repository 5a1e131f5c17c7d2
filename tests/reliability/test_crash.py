"""A collect killed with SIGKILL at any point, then run again, ends with the same database as
one clean collect: batches commit atomically and the watermark moves only after its batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import fakehub
from tests.hubtools import SINCE, TEST_SCALE, collect, migrated, snapshot

KILL_AFTER_S = (0.8, 1.6, 2.4, 3.5)


def _collect_process(hub, db_url: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "GITHUB_TOKEN": hub.token,
        "CIFLAKE_DB_URL": db_url,
        "CIFLAKE_API_URL": hub.base_url,
    }
    command = [
        sys.executable,
        "-m",
        "ciflake",
        "collect",
        "--once",
        "-q",
        "--since",
        SINCE.date().isoformat(),
    ]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_killed_collects_resume_to_the_clean_database(tmp_path):
    with fakehub.running(seed=11, scale=TEST_SCALE) as hub:
        clean_url = f"sqlite:///{tmp_path / 'clean.db'}"
        collect(hub, clean_url)
        clean = snapshot(migrated(clean_url))
        kills = 0
        for index, delay in enumerate(KILL_AFTER_S):
            url = f"sqlite:///{tmp_path / f'killed{index}.db'}"
            process = _collect_process(hub, url)
            time.sleep(delay)
            killed = process.poll() is None
            if killed:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.wait(timeout=60)
            if not killed:
                assert process.returncode == 0, process.stderr.read().decode()
            collect(hub, url)  # resume
            resumed = snapshot(migrated(url))
            for table, rows in clean.items():
                assert resumed[table] == rows, f"{table} differs after a kill at {delay}s"
        assert kills >= 3, "the collect finished before most kills: kill earlier"
