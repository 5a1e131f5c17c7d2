"""fakehub served by a child process (the demo's): it answers like the in-process one, and a
child that cannot start says why."""

from __future__ import annotations

import pytest
import requests

from fakehub.child import spawned
from fakehub.history import DEFAULT_END


def test_a_child_serves_the_history_and_stops_with_the_context() -> None:
    with spawned(seed=3, scale=0.05, pr_scale=0.01, end=DEFAULT_END, rate_limit=99) as hub:
        headers = {"Authorization": f"Bearer {hub.token}"}
        answer = requests.get(
            f"{hub.base_url}/repos/verl-project/verl/actions/runs?per_page=1",
            headers=headers,
            timeout=30,
        )
        assert answer.status_code == 200 and answer.json()["total_count"] > 0
        assert answer.headers["x-ratelimit-limit"] == "99"
        base = hub.base_url
    with pytest.raises(requests.ConnectionError):
        requests.get(base, timeout=5)


def test_a_child_that_cannot_start_says_why() -> None:
    with (
        pytest.raises(RuntimeError, match="fakehub did not start: .*scale"),
        spawned(
            seed=1,
            scale="lots",
            end=DEFAULT_END,  # type: ignore[arg-type]
        ),
    ):
        pass


def test_the_child_dies_with_its_parent(tmp_path) -> None:
    """A parent killed outright (no ``finally`` runs) takes its fakehub with it (Linux)."""
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from fakehub.child import spawned\n"
        "from fakehub.history import DEFAULT_END\n"
        "with spawned(seed=3, scale=0.02, end=DEFAULT_END) as hub:\n"
        "    print(hub.base_url, flush=True)\n"
        "    time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    base = parent.stdout.readline().strip()
    assert requests.get(base, timeout=10).status_code in (200, 401, 404)
    parent.kill()
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            requests.get(base, timeout=1)
        except requests.ConnectionError:
            return
        time.sleep(0.2)
    pytest.fail(f"fakehub at {base} outlived its parent")
