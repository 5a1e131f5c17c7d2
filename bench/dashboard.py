"""The data step of every dashboard page, as #49 means it: the time a page's script, with
every cache empty, spends getting its tables (inside ``reports.tables.build``, the registry
every table a page shows comes from, and inside the loaders of dashboard/loaders that read the
database otherwise: the change events, what the store lacks, the data stamp, a signature's
failures), on the scale-1 history and on sixteen copies of it (about a million jobs), on
SQLite and on PostgreSQL, against #49's targets (0.15 s at scale 1, 0.8 s at 16x). Drawing
(Plotly figures, Streamlit elements) is the rest of the page's script, given beside it;
the browser's rows (bench/browser.py) measure what a person waits for.

Each page's row splits its data step into the database's part (time inside the DBAPI:
connecting and the pool's ping, each statement's execute and the fetch of its rows, where
SQLite computes them; and the number of statements) and the rest, pandas and our Python over
the rows; a page over its target names which part alone is over it: its statements (the
database's floor for them) or our code. Beside them, the floor of one aggregated statement
over the scope's logical jobs and runs in the same run. Then the peak RSS of the dashboard's
server process once a browser visited every page at 16x (``python -m bench.run dashboard``;
the databases: bench/databases.py).

The page runs under Streamlit's AppTest, the timings wrapped around the registry, the
database-reading loaders (found in their source: those that open the engine), SQLAlchemy's
connection checkout and its DBAPI cursors, in the measuring process only; no product code
changes for it. ``CIFLAKE_BENCH_REPEATS=N`` sets the cold runs per page (default 3); a row
gives the run with the median data step.

With ``CIFLAKE_BENCH_BASELINE=REV`` (a commit that has the registry), the same pages are also
measured on the code of REV (a temporary git worktree, the same databases, the same run; the
two sides take turns page by page, so that drift in the machine's speed falls on both) and
each page that reads data gets a row of its data step now over its data step then: a change
may not make a page slower. The baseline checkout is given this one file (its cold
measurement and measuring server), which imports nothing of the benchmark's other modules at
its top."""

from __future__ import annotations

import ast
import functools
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
from dataclasses import asdict, dataclass
from pathlib import Path
from subprocess import PIPE
from types import ModuleType
from typing import Any

import dashboard
from reports import table_inputs

COMMAND = "python -m bench.run dashboard"
APP = Path(dashboard.__file__).with_name("app.py")
VIEWS = APP.with_name("views")
LOADERS = APP.with_name("loaders")
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


@dataclass
class Run:
    """One cold run of a page's script: its server time, the data step within it, the
    database's part of that and its statements."""

    script: float
    data: float
    database: float
    statements: int

    @property
    def pandas(self) -> float:
        """The data step outside the database: pandas and our Python over the rows."""
        return self.data - self.database


class _Clock:
    """Seconds spent inside the calls it times (``timed``), a call made inside another timed
    call counted once, with the outer one; ``statements`` counts the DBAPI executes."""

    def __init__(self) -> None:
        self.seconds, self.statements, self._inside = 0.0, 0, False

    def timed(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._inside:
                return function(*args, **kwargs)
            self._inside, started = True, time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self._inside = False

        return timed


DATA, DATABASE = _Clock(), _Clock()
SPENT: list[Run] = []  # each page script run in this process
Patch = Callable[[Any, str, Any], None]


class _TimedCursor:
    """A DBAPI cursor whose executes and fetches are timed on DATABASE (SQLite computes the
    rows during the fetch, psycopg converts them to Python there); anything else is the
    cursor's own."""

    def __init__(self, cursor: Any) -> None:
        object.__setattr__(self, "_cursor", cursor)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._cursor, name)
        if name in ("execute", "executemany"):
            DATABASE.statements += 1
        elif not name.startswith("fetch"):
            return value
        return DATABASE.timed(value)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._cursor, name, value)


def _database_loaders() -> Iterator[tuple[ModuleType, str]]:
    """(module, name) of every loader of dashboard/loaders that reads the database itself (it
    opens the engine) rather than through the registry: a loader that calls
    ``tables.build`` is timed inside it, not around its cache."""
    for path in sorted(LOADERS.glob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node in body:
            if not isinstance(node, ast.FunctionDef):
                continue
            called = {
                call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute | ast.Name)
            }
            if "engine" in called and "build" not in called:
                yield importlib.import_module(f"dashboard.loaders.{path.stem}"), node.name


def _timing(patch: Patch = setattr) -> None:
    """Time every run of a page's script (StreamlitPage.run, which st.navigation's router
    calls) into SPENT, with the data step within it: the time inside ``reports.tables.build``
    (the registry, every table a page shows) and inside the loaders that read the database
    otherwise (``_database_loaders``), and the database's part: every DBAPI connection's
    checkout (connecting, the ping) and each statement's execute and fetch. ``patch``
    (setattr, or a test's monkeypatch.setattr) puts each timed function in place."""
    from sqlalchemy.engine import Engine
    from sqlalchemy.engine.default import DefaultExecutionContext
    from streamlit.navigation.page import StreamlitPage

    from reports import tables

    patch(tables, "build", DATA.timed(tables.build))
    for module, name in _database_loaders():
        patch(module, name, DATA.timed(getattr(module, name)))
    patch(Engine, "raw_connection", DATABASE.timed(Engine.raw_connection))
    create_cursor = DefaultExecutionContext.create_cursor
    patch(DefaultExecutionContext, "create_cursor", lambda self: _TimedCursor(create_cursor(self)))
    run = StreamlitPage.run

    def timed(self: StreamlitPage) -> None:
        before = DATA.seconds, DATABASE.seconds, DATABASE.statements
        started = time.perf_counter()
        try:
            run(self)
        finally:
            script = time.perf_counter() - started
            data, database, statements = DATA.seconds, DATABASE.seconds, DATABASE.statements
            SPENT.append(
                Run(script, data - before[0], database - before[1], statements - before[2])
            )

    patch(StreamlitPage, "run", timed)


def page_run(page: str) -> Run:
    """One run of ``page``'s script, opened as the first page of a new session (app.py's
    sidebar and status lines run before it and are not counted), then one run on each of its
    other sections in turn, as clicks on their tabs (dashboard.sections), timed by ``_timing``
    and summed: the whole page's data step, every section's tables, as before a page showed
    one section at a time."""
    from streamlit.testing.v1 import AppTest

    try:
        from dashboard.sections import walked
    except ImportError:  # a baseline from before sections: the page's one run is all of it
        walked = None
    runs = len(SPENT)
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    opened = 0
    for _ in walked(app, page) if walked else [app.switch_page(f"views/{page}.py").run()]:
        if app.exception:
            raise RuntimeError(f"the {page} page failed: {app.exception[0].value}")
        opened += 1
    if len(SPENT) != runs + opened:
        raise RuntimeError(f"the {page} page ran {len(SPENT) - runs} times for {opened} sections")
    spent = SPENT[runs:]
    return Run(*(sum(getattr(run, name) for run in spent) for name in Run.__dataclass_fields__))


def _cold(db_url: str, page: str) -> Run:
    """One run of a page's script, every cache empty: in a child
    forked from an interpreter that ran every page once and emptied its caches
    (``_prepare``), which is a server's process before its first view, without paying the
    imports (about 8 s here) again for each measurement."""
    if threading.active_count() != 1:
        raise RuntimeError("forking with threads running: the child could inherit held locks")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(asdict(page_run(page))).encode())
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
    return Run(**json.loads(answer))


def _peak_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _prepare(db_url: str, patch: Patch = setattr) -> None:
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
    _timing(patch)
    for page in pages():
        page_run(page)
    st.cache_data.clear()
    st.cache_resource.clear()  # the engines too: a child opens its own connections
    table_inputs.forget_counts()  # the counts pages share: computed again by a first view
    gc.collect()


def _all_pages(db_url: str, repeats: int) -> dict[str, list[dict[str, Any]]]:
    """``repeats`` cold measurements of every page (``python -m bench.dashboard URL N``: the
    forks come from a clean interpreter, not from the benchmark runner)."""
    _prepare(db_url)
    return {page: [asdict(_cold(db_url, page)) for _ in range(repeats)] for page in pages()}


def _serve(db_url: str) -> None:
    """``python -m bench.dashboard --serve URL``: one cold measurement per page name read on
    stdin, answered as a JSON line (a ``Run``), so that two checkouts can take turns page
    by page without paying their imports each time."""
    _prepare(db_url)
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(asdict(_cold(db_url, line.strip()))), flush=True)


@contextmanager
def _side(db_url: str, code: Path | None) -> Iterator[Callable[[str], Run]]:
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

        def measure(page: str) -> Run:
            stdin.write(page + "\n")
            stdin.flush()
            return Run(**json.loads(answer()))

        if answer().strip() != "ready":  # imported; anything else is not a measurement
            errors.seek(0)
            raise RuntimeError(f"a measuring server did not start:\n{errors.read()[-3000:]}")
        try:
            yield measure
        finally:
            stdin.close()  # the server's loop ends; Popen's exit waits for it


def _measured(db_url: str, repeats: int = REPEATS) -> dict[str, list[Run]]:
    """Every page measured ``repeats`` times by this checkout's code."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.dashboard", db_url, str(repeats)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring the pages on {db_url} failed:\n{done.stderr[-3000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return {page: [Run(**run) for run in runs] for page, runs in measured.items()}


def _interleaved(
    db_url: str, code: Path, rounds: int
) -> tuple[dict[str, list[Run]], dict[str, list[Run]]]:
    """(now, then): ``rounds`` cold measurements of every page on this code and on ``code``, the
    two sides taking turns page by page (which goes first alternates), so that the machine's
    speed, which drifts by 20% within a minute here, falls on both alike. A first round, not
    counted, reads the database into the OS's cache for both: "cold" is the dashboard's
    caches, not the disk."""
    now: dict[str, list[Run]] = {}
    then: dict[str, list[Run]] = {}
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


def _median(runs: list[Run]) -> Run:
    """The run whose data step is the median (the lower of the two middle ones): its parts
    then add up to it."""
    return sorted(runs, key=lambda run: run.data)[(len(runs) - 1) // 2]


def _versus(
    page: str, label: str, now: Run, then: Run, revision: str, rounds: int
) -> dict[str, Any]:
    ratio = now.data / then.data
    return {
        "figure": f"Dashboard data, {page} page, {label}: now / at {revision[:7]}",
        "value": f"{ratio:.2f}x ({now.data:.2f} s vs {then.data:.2f} s)",
        "target": f"<= {NOISE:.2f}x",
        "met": ratio <= NOISE,
        "command": f"CIFLAKE_BENCH_BASELINE={revision[:7]} {COMMAND}",
        "note": f"the data step, medians of {rounds} cold runs each (those runs' page scripts "
        f"{now.script:.2f} s vs {then.script:.2f} s), the same database, each page timed "
        "alike (a page the older code did not have, or with no data step on one side, is "
        f"not compared), the two sides taking turns page by page; above {NOISE:.2f}x counts "
        "as slower",
    }


def _stopped_by(run: Run, target: float) -> str:
    """Which part of a data step over ``target`` stops it: the database's (its statements,
    each one aggregated already, cannot go faster) or ours (pandas and Python)."""
    parts = [
        f"its statements (the database's part alone, {run.database:.2f} s in "
        f"{run.statements}, is over the target)" * (run.database > target),
        f"our code (the pandas part alone, {run.pandas:.2f} s, is over the target)"
        * (run.pandas > target),
    ]
    stopped = " and ".join(part for part in parts if part)
    if not stopped:
        return (
            f"; stopped by both together: database {run.database:.2f} s, pandas "
            f"{run.pandas:.2f} s, neither alone over the target"
        )
    return f"; stopped by {stopped}"


def _page_row(page: str, where: str, run: Run, target: float, note: str) -> dict[str, Any]:
    """The row of one page's data step: its median ``run``, against ``target``."""
    met = run.data <= target
    return {
        "figure": f"Dashboard data, {page} page, {where} (cold)",
        "value": f"{run.data:.2f} s",
        "target": f"<= {target:g} s",
        "met": met,
        "command": COMMAND,
        "note": f"data {run.data:.2f} s = database {run.database:.2f} s in {run.statements} "
        f"statements + pandas {run.pandas:.2f} s; page script {run.script:.2f} s, of which "
        f"data {run.data:.2f} s, drawing the rest{'' if met else _stopped_by(run, target)}; "
        + note,
    }


def measure() -> list[dict[str, Any]]:
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
    where = f"{label}, {backend}"
    for page, runs in now.items():
        run = _median(runs)
        if baseline and page in before:
            then = _median(before[page])
            if run.data and then.data:
                rows.append(_versus(page, where, run, then, baseline[0], rounds))
        note = (
            f"{jobs:,} jobs; the data step: time inside reports.tables.build and the loaders "
            f"that read the database, during the page's script (views/{page}.py under "
            "Streamlit's AppTest, after app.py's sidebar), every cache empty; the database: "
            "DBAPI connect, execute and fetch; the run with the median data step of "
            f"{rounds if baseline else REPEATS}; the floors of the same run: {floor_note}"
        )
        rows.append(_page_row(page, where, run, target, note))
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
        with chromium() as context:
            first, *others = PAGES
            page, _ = open_page(context, address, first)
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
