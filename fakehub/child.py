"""fakehub in a child process: the demo's collect then has a core of its own.

In-process (``fakehub.running``) the server and the collector share one interpreter and so one
core; on a 2-core machine a child process serves while the collector works, which makes a
collect about a third faster. The child is ``ciflake fakehub`` itself; its first line names the
address it serves.
"""

from __future__ import annotations

import ctypes
import re
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from fakehub.server import DEFAULT_TOKEN, admin_call

SERVING = re.compile(r"fakehub serving (?:\S+, )*\S+ at (http://\S+)")
COMMAND = "from fakehub.cli import fakehub_command; fakehub_command()"
STARTUP_SECONDS = 120  # building a scale-1 history takes a few seconds
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a child gets when its parent dies


@dataclass(frozen=True)
class ChildHub:
    """A fakehub served by a child process: its address and accepted token."""

    base_url: str
    token: str

    def admin(
        self, method: str, name: str, body: dict[str, Any] | None = None, repo: str | None = None
    ) -> Any:
        return admin_call(self.base_url, method, name, body, repo)


@contextmanager
def spawned(
    *,
    seed: int,
    scale: float,
    end: datetime,
    pr_scale: float | None = None,
    rate_limit: int = 5000,
    token: str = DEFAULT_TOKEN,
    web_url: str | None = None,
    repos: tuple[str, ...] = (),
) -> Iterator[ChildHub]:
    """Serve fakehub (the options of ``ciflake fakehub``) from a child process until exit;
    ``repos``: the repositories to serve (default: all)."""
    args = [
        *("--seed", str(seed), "--scale", str(scale), "--end", f"{end:%Y-%m-%d}"),
        *("--rate-limit", str(rate_limit), "--token", token),
        *(("--pr-scale", str(pr_scale)) if pr_scale is not None else ()),
        *(("--web-url", web_url) if web_url is not None else ()),
        *(arg for repo in repos for arg in ("--repo", repo)),
    ]
    # stderr to a file: a pipe nobody reads could fill up and block the child
    with tempfile.TemporaryFile(mode="w+") as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", COMMAND, *args],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            preexec_fn=_die_with_parent,
        )
        try:
            yield _started(child, errors, token)
        finally:
            _stop(child)


def _die_with_parent() -> None:
    """In the child, before it starts: on Linux, ask for SIGTERM when the parent dies, however
    it dies (a SIGKILL skips every ``finally``); elsewhere nothing."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _started(child: subprocess.Popen[str], errors: IO[str], token: str) -> ChildHub:
    """The hub once the child printed its address; its last error line when it did not."""
    assert child.stdout is not None
    readable, _, _ = select.select([child.stdout], [], [], STARTUP_SECONDS)
    first = child.stdout.readline() if readable else ""  # click writes whole lines
    served = SERVING.match(first)
    if served is None:
        _stop(child)
        errors.seek(0)
        said = errors.read().strip().splitlines() or [first.strip()]
        last = said[-1] or f"no address within {STARTUP_SECONDS} s"
        raise RuntimeError(f"fakehub did not start: {last}")
    return ChildHub(served.group(1), token)


def _stop(child: subprocess.Popen[str]) -> None:
    """Terminate the child, kill it if it lingers (or if the wait is interrupted)."""
    try:
        if child.poll() is None:
            child.terminate()
            child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
