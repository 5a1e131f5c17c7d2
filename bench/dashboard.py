"""The data step of every dashboard page: the server time of the page's script (its
``dashboard/views`` file, run by Streamlit's router after ``app.py`` drew the sidebar) with
every cache empty, on the scale-1 history and on sixteen copies of it (about a million jobs),
on SQLite and on PostgreSQL, against #49's targets (0.15 s at scale 1, 0.8 s at 16x); beside
it, the floor of one aggregated statement over the scope's logical jobs and runs in the same
run. Then the peak RSS of the dashboard's server process once a browser visited every page at
16x (``python -m bench.run dashboard``; the databases: bench/databases.py).

The page runs under Streamlit's AppTest, so the figure is whatever the page does, whichever
loaders and tables it calls: nothing here names them. ``CIFLAKE_BENCH_REPEATS=N`` sets the
cold runs per page (default 3).

With ``CIFLAKE_BENCH_BASELINE=REV`` (a commit), the same pages are also measured on the code of
REV (a temporary git worktree, the same databases, the same run; the two sides take turns page
by page, so that drift in the machine's speed falls on both) and each page gets a row of its
time now over its time then: a change may not make a page slower. The baseline checkout is
given this one file (its cold measurement and measuring server), which imports nothing of the
benchmark's other modules at its top."""

from __future__ import annotations

import ast
import gc
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import PIPE
from typing import Any

import dashboard

COMMAND = "python -m bench.run dashboard"
APP = Path(dashboard.__file__).with_name("app.py")
VIEWS = APP.with_name("views")
TIMEOUT = 600  # s: a page at 16x on a loaded machine
REPEATS = int(os.environ.get("CIFLAKE_BENCH_REPEATS", "3"))
NOISE = 1.10  # now/then above this counts as slower: cold runs of one page vary by about that
# label -> (copies of scale 1, target seconds per page, rounds against a baseline). One cold
# run of a page varies by 10-20% from the next on this 2-core machine (more on the small
# database), so three medians could not tell a 10% change from noise; the small database's
# rounds are cheap. The machine's own speed also drifts by up to 2x within minutes (the same
# code, minutes apart), which only more interleaved rounds absorb.
DATABASES = {
    "scale 1": (1, 0.15, 15),
    "16x": (16, 0.8, 9),
}
MEMORY_COPIES, MEMORY_TARGET_MB = 16, 600


def pages() -> list[str]:
    """Every page of the dashboard: its file in dashboard/views."""
    return sorted(path.stem for path in VIEWS.glob("*.py"))


SPENT: list[float] = []  # the server time of each page script run in this process


def _timing_pages() -> None:
    """Time every run of a page's script (StreamlitPage.run, which st.navigation's router
    calls) into SPENT."""
    from streamlit.navigation.page import StreamlitPage

    run = StreamlitPage.run

    def timed(self: StreamlitPage) -> None:
        started = time.perf_counter()
        try:
            run(self)
        finally:
            SPENT.append(time.perf_counter() - started)

    StreamlitPage.run = timed  # type: ignore[method-assign]


def page_seconds(page: str) -> float:
    """The server time of one run of ``page``'s script, opened as the first page of a new
    session (app.py's sidebar and status lines run before it and are not counted)."""
    from streamlit.testing.v1 import AppTest

    runs = len(SPENT)
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.switch_page(f"views/{page}.py").run()
    if app.exception:
        raise RuntimeError(f"the {page} page failed: {app.exception[0].value}")
    if len(SPENT) != runs + 1:
        raise RuntimeError(f"the {page} page did not run once: {len(SPENT) - runs} runs")
    return SPENT[-1]


def _cold(db_url: str, page: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one page's script, every cache empty: in a child forked from
    an interpreter that ran every page once and emptied its caches (``_prepare``), which is a
    server's process before its first view, without paying the imports (about 8 s here) again
    for each measurement."""
    if threading.active_count() != 1:
        raise RuntimeError("forking with threads running: the child could inherit held locks")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            seconds = page_seconds(page)
            rss = _peak_mb(os.getpid())
            os.write(write, json.dumps([seconds, rss]).encode())
            os._exit(0)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not answer:
        raise RuntimeError(f"the {page} page failed on {db_url}")
    seconds, rss = json.loads(answer)
    return float(seconds), float(rss)


def _peak_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _prepare(db_url: str) -> None:
    """Import what app.py and every page import (read from their source) and run every page
    once, then empty every cache, before the forks: a child then times the page's data and
    drawing, not the imports and first uses (Plotly builds its validators on first use) that
    a server pays once."""
    import streamlit as st

    os.environ["CIFLAKE_DB_URL"] = db_url
    for script in [APP, *(VIEWS / f"{page}.py" for page in pages())]:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                importlib.import_module(name)
    _timing_pages()
    for page in pages():
        page_seconds(page)
    st.cache_data.clear()
    st.cache_resource.clear()  # the engines too: a child opens its own connections
    gc.collect()


def _all_pages(db_url: str, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """``repeats`` cold measurements of every page (``python -m bench.dashboard URL N``: the
    forks come from a clean interpreter, not from the benchmark runner)."""
    _prepare(db_url)
    return {page: [_cold(db_url, page) for _ in range(repeats)] for page in pages()}


def _serve(db_url: str) -> None:
    """``python -m bench.dashboard --serve URL``: one cold measurement per page name read on
    stdin, answered as a JSON line [seconds, rss], so that two checkouts can take turns page
    by page without paying their imports each time."""
    _prepare(db_url)
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(_cold(db_url, line.strip())), flush=True)


@contextmanager
def _side(db_url: str, code: Path | None) -> Iterator[Callable[[str], tuple[float, float]]]:
    """A measuring server (``_serve``) running the code of ``code`` (a checkout; default:
    this one), as a function of a page name."""
    command = [sys.executable, "-m", "bench.dashboard", "--serve", db_url]
    with (
        tempfile.TemporaryFile("w+") as errors,
        # cwd: its own packages come first on sys.path (python -m puts the cwd there)
        subprocess.Popen(
            command, stdin=PIPE, stdout=PIPE, stderr=errors, text=True, cwd=code
        ) as process,
    ):
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        def answer() -> str:
            line = stdout.readline()
            if not line:
                errors.seek(0)
                raise RuntimeError(f"a page measurement failed:\n{errors.read()[-3000:]}")
            return line

        def measure(page: str) -> tuple[float, float]:
            stdin.write(page + "\n")
            stdin.flush()
            seconds, rss = json.loads(answer())
            return float(seconds), float(rss)

        if answer().strip() != "ready":  # imported; anything else is not a measurement
            errors.seek(0)
            raise RuntimeError(f"a measuring server did not start:\n{errors.read()[-3000:]}")
        try:
            yield measure
        finally:
            stdin.close()  # the server's loop ends; Popen's exit waits for it


def _measured(db_url: str, repeats: int = REPEATS) -> dict[str, list[tuple[float, float]]]:
    """Every page measured ``repeats`` times by this checkout's code."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.dashboard", db_url, str(repeats)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring the pages on {db_url} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _interleaved(db_url: str, code: Path, rounds: int) -> tuple[dict, dict]:
    """(now, then): ``rounds`` cold measurements of every page on this code and on ``code``, the
    two sides taking turns page by page (which goes first alternates), so that the machine's
    speed, which drifts by 20% within a minute here, falls on both alike. A first round, not
    counted, reads the database into the OS's cache for both: "cold" is the dashboard's
    caches, not the disk."""
    now: dict[str, list] = {}
    then: dict[str, list] = {}
    with _side(db_url, None) as measure_now, _side(db_url, code) as measure_then:
        sides = [(now, measure_now), (then, measure_then)]
        both = [page for page in pages() if (code / "dashboard" / "views" / f"{page}.py").exists()]
        for page in both:
            for _, measure in sides:
                measure(page)
        for round_ in range(rounds):
            for number, page in enumerate(both):
                turn = sides if (round_ + number) % 2 == 0 else sides[::-1]
                for results, measure in turn:
                    results.setdefault(page, []).append(measure(page))
    return now, then


@contextmanager
def _baseline() -> Iterator[tuple[str, Path] | None]:
    """(revision, worktree) of CIFLAKE_BENCH_BASELINE, removed afterwards; None when unset."""
    revision = os.environ.get("CIFLAKE_BENCH_BASELINE")
    if not revision:
        yield None
        return
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        git = ["git", "-C", str(root)]
        subprocess.run([*git, "worktree", "add", "-q", "--detach", str(tree), revision], check=True)
        # The same measuring code on both sides: each page's script timed alike.
        shutil.copyfile(Path(__file__), tree / "bench" / "dashboard.py")
        try:
            yield revision, tree
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(tree)], check=True)


def _versus(page: str, label: str, now: float, then: float, revision: str, rounds: int) -> dict:
    ratio = now / then
    return {
        "figure": f"Dashboard data, {page} page, {label}: now / at {revision[:7]}",
        "value": f"{ratio:.2f}x ({now:.2f} s vs {then:.2f} s)",
        "target": f"<= {NOISE:.2f}x",
        "met": ratio <= NOISE,
        "command": f"CIFLAKE_BENCH_BASELINE={revision[:7]} {COMMAND}",
        "note": f"medians of {rounds} cold runs each, the same database, each page's script "
        "timed alike (a page the older code did not have is not timed), "
        f"the two sides taking turns page by page; above {NOISE:.2f}x counts as slower",
    }


def measure() -> list[dict]:
    with _baseline() as baseline:
        return _measure(baseline)


def _floors(db_url: str) -> dict[str, float]:
    """The floor of a page's data step here: the warm median of one aggregated statement
    (GROUP BY workflow, logical job or none, UTC day and outcome) over the default scope's
    logical jobs and over its logical runs, every date: about what a page's one job-level and
    one run-level statement cannot go below."""
    from sqlalchemy import func, select

    from reports.query import Query
    from store.engine import make_engine
    from store.models import LogicalJob, LogicalRun, WorkflowRun
    from store.runfilter import UTCDay, filtered
    from store.settings import load_config

    project = load_config(env={}, db_url=db_url).project()
    where = Query(None, None, (), "default").where(project)
    day = UTCDay(WorkflowRun.created_at)
    run_columns = (WorkflowRun.workflow_path, day)
    statements = {
        "logical jobs": select(
            *run_columns, LogicalJob.logical_job, LogicalJob.logical_outcome
        ).join(WorkflowRun, WorkflowRun.id == LogicalJob.run_id),
        "logical runs": select(*run_columns, LogicalRun.logical_outcome).join(
            WorkflowRun, WorkflowRun.id == LogicalRun.run_id
        ),
    }
    engine = make_engine(db_url, read_only=True)
    seconds: dict[str, float] = {}
    with engine.connect() as conn:
        for name, stmt in statements.items():
            grouped = filtered(stmt.add_columns(func.count()), where).group_by(
                *stmt.selected_columns
            )
            times = []
            for _ in range(REPEATS + 1):  # the first reads the tables into the OS's cache
                started = time.perf_counter()
                conn.execute(grouped).all()
                times.append(time.perf_counter() - started)
            seconds[name] = statistics.median(times[1:])
    engine.dispose()
    return seconds


def _page_rows(
    url: str, label: str, backend: str, baseline: tuple[str, Path] | None
) -> list[dict[str, Any]]:
    """The data step of every page on ``url`` and its floors, ``label``'s target."""
    from bench.databases import job_count

    copies, target, rounds = DATABASES[label]
    jobs, floors = job_count(url), _floors(url)
    now, before = _interleaved(url, baseline[1], rounds) if baseline else (_measured(url), {})
    floor_note = " and ".join(f"{name} {seconds:.2f} s" for name, seconds in floors.items())
    rows: list[dict[str, Any]] = [
        {
            "figure": f"Dashboard data floor, one GROUP BY over the scope's {name}, {label}, "
            f"{backend}",
            "value": f"{seconds:.2f} s",
            "target": "-",
            "met": None,
            "command": COMMAND,
            "note": f"{jobs:,} jobs; one statement grouping the default scope's {name} by "
            "workflow, (logical job,) UTC day and outcome, every date, warm; median of "
            f"{REPEATS}, measured in the same run as the pages",
        }
        for name, seconds in floors.items()
    ]
    for page, results in now.items():
        seconds = statistics.median(s for s, _ in results)
        if baseline and page in before:
            then = statistics.median(s for s, _ in before[page])
            rows.append(_versus(page, f"{label}, {backend}", seconds, then, baseline[0], rounds))
        rows.append(
            {
                "figure": f"Dashboard data, {page} page, {label}, {backend} (cold)",
                "value": f"{seconds:.2f} s",
                "target": f"<= {target:g} s",
                "met": seconds <= target,
                "command": COMMAND,
                "note": f"{jobs:,} jobs; the server time of the page's script (views/{page}.py "
                "under Streamlit's AppTest, after app.py's sidebar), every cache empty; "
                f"median of {rounds if baseline else REPEATS}; the floors of the same run: "
                f"{floor_note}",
            }
        )
    return rows


def _not_measured(label: str, backend: str, reason: str) -> list[dict[str, Any]]:
    return [
        {
            "figure": f"Dashboard data, {page} page, {label}, {backend} (cold)",
            "value": "not measured",
            "target": f"<= {DATABASES[label][1]:g} s",
            "met": None,
            "command": COMMAND,
            "note": reason,
        }
        for page in pages()
    ]


def _memory_row(path: Path) -> dict[str, Any]:
    """The dashboard server's peak RSS once Chromium opened its first page and clicked
    through the sidebar to every other (each page computed once, as a person's first visit)."""
    from bench.browser import (
        PAGES,
        chromium,
        click_to,
        free_port,
        new_context,
        open_page,
        unavailable,
    )
    from dashboard.launch import start_dashboard, stop_dashboard, wait_until_ready

    figure = f"Peak RSS of the dashboard process after visiting every page, {MEMORY_COPIES}x"
    row = {"figure": figure, "target": f"<= {MEMORY_TARGET_MB} MB", "command": COMMAND}
    reason = unavailable()
    if reason is not None:
        return {**row, "value": "not measured", "met": None, "note": reason}
    url = f"sqlite:///{path}"
    process, address = start_dashboard(db_url=url, host="127.0.0.1", port=free_port())
    try:
        wait_until_ready(address, process, timeout=120)
        with chromium() as browser:
            first, *others = PAGES
            page, _ = open_page(new_context(browser), address, first)
            for name in others:
                click_to(page, name)
            peak = _peak_mb(process.pid)
    finally:
        stop_dashboard(process)
    from bench.databases import job_count

    return {
        **row,
        "value": f"{peak:.0f} MB",
        "met": peak <= MEMORY_TARGET_MB,
        "note": f"{job_count(url):,} jobs; VmHWM of the Streamlit server (started as "
        "`ciflake dashboard` starts it) after one Chromium tab opened the first page and "
        "clicked through the sidebar to every other, default filters",
    }


def _measure(baseline: tuple[str, Path] | None) -> list[dict[str, Any]]:
    from bench.databases import pg_server, postgres_database, sqlite_database

    rows: list[dict[str, Any]] = []
    server = pg_server()
    with tempfile.TemporaryDirectory() as tmp:
        for label, (copies, _, _) in DATABASES.items():
            with sqlite_database(copies, Path(tmp)) as path:
                rows += _page_rows(f"sqlite:///{path}", label, "SQLite", baseline)
                if copies == MEMORY_COPIES:
                    rows.append(_memory_row(path))
            if server is None:
                rows += _not_measured(label, "PostgreSQL", "set CIFLAKE_TEST_PG_URL")
                continue
            with postgres_database(server, copies) as url:
                rows += _page_rows(url, label, "PostgreSQL", baseline)
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _serve(sys.argv[2])
    else:
        repeats = int(sys.argv[2]) if len(sys.argv) > 2 else REPEATS
        print(json.dumps(_all_pages(sys.argv[1], repeats)))
