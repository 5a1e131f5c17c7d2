"""Start the Streamlit server as a child process and wait until it answers: shared by
``ciflake dashboard``, ``ciflake demo`` and the browser test."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

APP = Path(__file__).with_name("app.py")
HEALTH_PATH = "/_stcore/health"


class DashboardError(RuntimeError):
    """The port is taken, or the server exited or did not answer in time; the message says
    which."""


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process listens on, before any URL is claimed: Streamlit would
    only log "Port N is not available", and the health check could reach the other process's
    server and call it ours. Binds as Tornado does (SO_REUSEADDR, IPv6 only on IPv6), so a port
    Streamlit could take passes."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return  # a host that does not resolve: Streamlit's own error says so
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise DashboardError(
                        f"port {port} on {host} is in use by another process: choose another "
                        "with --port N, or set [dashboard] port in ciflake.toml"
                    ) from None


def start_dashboard(
    *, db_url: str, host: str, port: int, config_path: str | None = None, app: Path = APP
) -> tuple[subprocess.Popen[bytes], str]:
    """Launch ``streamlit run dashboard/app.py`` (headless, no usage statistics, no watch on
    its source files) with the database URL and config file in its environment; returns the
    process and its URL. ``app``: another script served the same way (the benchmark's blank
    page). A port in use is a ``DashboardError``, raised before anything starts."""
    check_port_free(host, port)
    env = {**os.environ, "CIFLAKE_DB_URL": db_url}
    # Arrow memory from the C heap from the start, C++ side included (why: dashboard.loaders,
    # which does the same for a dashboard started without this launcher); a setting wins.
    env.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if config_path is not None:
        env["CIFLAKE_CONFIG"] = str(Path(config_path).resolve())
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",  # no Deploy button: a maintainer's dashboard, not an app to publish
        # No watch on the source files: an installed dashboard is not edited while it serves,
        # and each new tab's session would first register every module of the app with the
        # watcher (0.3-0.5 s of a new tab on the bench's 2 cores, before its page shows).
        "--server.fileWatcherType",
        "none",
        "--server.address",
        host,
        "--server.port",
        str(port),
    ]
    process = subprocess.Popen(command, env=env)
    return process, f"http://{host}:{port}"


def wait_until_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    """Poll Streamlit's health endpoint until it says ok while the process runs (an answer
    after it exited came from another server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DashboardError(f"the dashboard exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url + HEALTH_PATH, timeout=2) as answer:
                if answer.status == 200 and process.poll() is None:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    raise DashboardError(f"the dashboard did not answer at {url} within {timeout:.0f}s")


def stop_dashboard(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Terminate the server, then kill it if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_until_stopped(process: subprocess.Popen[bytes]) -> None:
    """Wait for the server; Ctrl-C or SIGTERM stop it, so no orphan keeps the port."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_dashboard(process)
