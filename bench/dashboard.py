"""Each dashboard page's data, computed cold (fresh process, empty caches) on the scale-1
history and on bigger databases, against the 1 s and 5 s targets (``python -m bench.run
dashboard``). A bigger database repeats every run, attempt, job and failure of scale 1 under
new ids: the same dates, denser. Ten copies make the 10x database (about 620,000 jobs); the
issue expects about a million jobs at 10x, so sixteen copies (about 1,000,000 jobs) are
measured against the same target too.

With ``CIFLAKE_BENCH_BASELINE=REV`` (a commit), the same pages are also measured on the code of
REV (a temporary git worktree, the same databases, the same run; the two sides take turns page
by page, so that drift in the machine's speed falls on both) and each page gets
a row of its time now over its time then: a change may not make a page slower.

One module of about 380 lines, over the usual 350: the baseline checkout is given this one
file (its page calls, cold measurement and measuring server), so they cannot be split apart."""

from __future__ import annotations

import importlib
import json
import os
import resource
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

from sqlalchemy import text

from store.engine import make_engine
from store.migrate import upgrade

SCALE1_DB = Path(__file__).with_name("out") / "scale1.db"
COMMAND = "python -m bench.run dashboard"
REPO = "verl-project/verl"
ID_STEP = 10**12
REPEATS = 3
NOISE = 1.10  # now/then above this counts as slower: cold runs of one page vary by about that
# Why a page misses its target, measured with cProfile (default scope).
SLOW_SMALL = (
    "the page reads the scope's logical runs and jobs from the derived tables (no more attempts "
    "collapsed) and computes before/after, category mix, successor strips, coverage or "
    "verdicts in pandas over them: hundreds of small pandas operations whose fixed cost, not "
    "the data, makes most of the time; aggregated SQL per page (counts by workflow, day and "
    "outcome, lineages joined after) would leave pandas a few hundred rows"
)
SLOW_BIG = (
    "a page that needs logical jobs reads every logical job of its scope from the derived "
    "tables into pandas (about 330,000 rows at 16x: fetch and frame building dominate), then "
    "the page's own work; aggregated SQL per page (counts by workflow, logical job, day and "
    "outcome) would hand pandas a result whose size does not grow with the copies"
)
# label -> (copies of scale 1, target seconds per page, rounds against a baseline). One cold
# run of a page varies by 10-20% from the next on this 2-core machine (more on the small
# database, whose pages take half a second), so three medians could not tell a 10% change
# from noise; the small database's rounds are cheap. The machine's own speed also drifts by up
# to 2x within minutes (the same code, minutes apart), which only more interleaved rounds absorb.
DATABASES = {
    "scale 1": (1, 0.3, 15),  # #34's targets: 0.3 s at scale 1, 1.5 s at 16x
    "10x": (10, 5.0, 11),
    "16x, about a million jobs": (16, 1.5, 9),
}

# The loader calls each page makes on its first view (dashboard/views/*.py): (module of
# dashboard/loaders, loader, arguments after the database URL and filters).
PAGES: dict[str, list[tuple[str, str, tuple]]] = {
    "overview": [
        ("overview", "tiles", ()),
        ("overview", "timeline", ("D",)),
        ("migrations", "changepoints", ()),
        ("overview", "heatmap", (".github/workflows/e2e_v1_separate_async.yml", 28)),
    ],
    "migrations": [
        ("migrations", "before_after", ()),
        ("migrations", "category_shift", ()),
        ("migrations", "successor_first_runs", ()),
        ("migrations", "coverage_lost", ()),
    ],
    "failures": [("failures", "failure_periods", ("W",)), ("failures", "signatures", ())],
    "flaky_jobs": [
        ("flaky_jobs", "flaky_jobs", ()),
        ("flaky_jobs", "job_verdicts", ()),
        ("flaky_jobs", "repair_and_cost", (False,)),  # the job costs wait for the toggle
    ],
    "runners": [
        ("runners", "runner_rates", ("runner_pool",)),
        ("runners", "runner_rates", ("runner_name",)),
        ("runners", "environment_failures", ()),
    ],
}


def _loader(module: str, name: str) -> Any:
    """The loader ``name`` of ``dashboard.loaders.<module>``; on a baseline from before #18,
    where ``dashboard/loaders.py`` was one module, the function of that name there (None when
    the page did not compute it then: it is not timed on that side)."""
    loaders = importlib.import_module("dashboard.loaders")
    if hasattr(loaders, "__path__"):  # a package: a module per page
        return getattr(importlib.import_module(f"dashboard.loaders.{module}"), name)
    return getattr(loaders, name, None)


def page_seconds(db_url: str, page: str) -> float:
    """The wall time of one page's loader calls (in a process with empty caches: cold)."""
    from dashboard.filters import Filters

    first, last = _loader("shared", "day_span")(db_url, REPO)
    filters = Filters(REPO, first, last, (), "default")
    calls = [(_loader(module, name), args) for module, name, args in PAGES[page]]
    started = time.perf_counter()
    for loader, args in calls:
        if loader is not None:
            loader(db_url, filters, *args)
    return time.perf_counter() - started


def _cold(db_url: str, page: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one page's data, every cache empty: in a child forked from
    an interpreter that imported the dashboard and computed nothing, which is a fresh process
    without paying the imports (about 8 s here) again for each measurement."""
    if threading.active_count() != 1:
        raise RuntimeError("forking with threads running: the child could inherit held locks")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            seconds = page_seconds(db_url, page)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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


def _import_pages(db_url: str) -> None:
    """Import every page's loaders once, before the forks."""
    os.environ["CIFLAKE_DB_URL"] = db_url
    for calls in PAGES.values():
        for module, name, _ in calls:
            _loader(module, name)


def _all_pages(db_url: str, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """``repeats`` cold measurements of every page (``python -m bench.dashboard URL N``: the
    forks come from a clean interpreter, not from the benchmark runner)."""
    _import_pages(db_url)
    return {page: [_cold(db_url, page) for _ in range(repeats)] for page in PAGES}


def _serve(db_url: str) -> None:
    """``python -m bench.dashboard --serve URL``: one cold measurement per page name read on
    stdin, answered as a JSON line [seconds, rss], so that two checkouts can take turns page
    by page without paying their imports each time."""
    _import_pages(db_url)
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
        for page in PAGES:
            for _, measure in sides:
                measure(page)
        for round_ in range(rounds):
            for number, page in enumerate(PAGES):
                turn = sides if (round_ + number) % 2 == 0 else sides[::-1]
                for results, measure in turn:
                    results.setdefault(page, []).append(measure(page))
    return now, then


def _copies(source: Path, target: Path, copies: int) -> None:
    """Copy ``source`` and add ``copies`` - 1 shifted copies of every run and what hangs off
    it."""
    target.write_bytes(source.read_bytes())
    engine = make_engine(f"sqlite:///{target}")
    shifted = {
        "workflow_runs": ("id",),
        "run_attempts": ("run_id",),
        "jobs": ("id", "run_id"),
        "job_logs": ("job_id",),
        "failures": ("run_id", "job_id"),
        # the derived tables (a database of this version): a copy's rows are its runs' rows
        "logical_runs": ("run_id",),
        "logical_jobs": ("run_id", "red_job_id"),
    }
    with engine.begin() as conn:
        tables = {row[0] for row in conn.execute(text("SELECT name FROM sqlite_master"))}
        for copy in range(1, copies):
            offset = copy * ID_STEP
            for table, keys in shifted.items():
                if table not in tables:
                    continue
                columns = [row[1] for row in conn.execute(text(f"PRAGMA table_info({table})"))]
                values = [
                    f"CASE WHEN {c} = 0 THEN 0 ELSE {c} + {offset} END"
                    if (table, c) == ("failures", "job_id")
                    else (f"{c} + {offset}" if c in keys else c)
                    for c in columns
                ]
                conn.execute(
                    text(
                        f"INSERT INTO {table} ({', '.join(columns)}) "
                        f"SELECT {', '.join(values)} FROM {table} WHERE "
                        f"{keys[0]} < {ID_STEP}"
                    )
                )
    engine.dispose()


def _job_count(path: Path) -> int:
    engine = make_engine(f"sqlite:///{path}", read_only=True)
    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM jobs")).scalar_one()
    engine.dispose()
    return int(count)


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
        # The same measuring code on both sides: the same loader calls of each page.
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
        "note": f"medians of {rounds} cold runs each, the same database and the same loader "
        "calls (this file's PAGES; a loader the older page did not have is not timed there), "
        f"the two sides taking turns page by page; above {NOISE:.2f}x counts as slower",
    }


def measure() -> list[dict]:
    with _baseline() as baseline:
        return _measure(baseline)


def scale1_ready() -> Path:
    """The scale-1 database, collected if missing, at the head schema (with its read indexes)
    and with its derived tables current, as a collect of this version leaves them."""
    from analytics import derived
    from store.settings import load_config

    if not SCALE1_DB.exists():
        from bench.collector import build_scale1

        build_scale1(SCALE1_DB)
    url = f"sqlite:///{SCALE1_DB}"
    engine = make_engine(url)
    upgrade(engine)
    project = load_config(env={}, db_url=url).project()
    derived.ensure_current(engine, project.repo, project)
    engine.dispose()
    return SCALE1_DB


def _measure(baseline: tuple[str, Path] | None) -> list[dict]:
    scale1_ready()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, (copies, target, rounds) in DATABASES.items():
            path = SCALE1_DB
            if copies > 1:
                path = Path(tmp) / f"copies-{copies}.db"
                _copies(SCALE1_DB, path, copies)
            url, jobs, peak = f"sqlite:///{path}", _job_count(path), 0.0
            now, before = (
                _interleaved(url, baseline[1], rounds) if baseline else (_measured(url), {})
            )
            for page, results in now.items():
                seconds = statistics.median(s for s, _ in results)
                if baseline and page in before:
                    then = statistics.median(s for s, _ in before[page])
                    rows.append(_versus(page, label, seconds, then, baseline[0], rounds))
                peak = max(peak, *(rss for _, rss in results))
                rows.append(
                    {
                        "figure": f"Dashboard data, {page} page, {label} (cold)",
                        "value": f"{seconds:.2f} s",
                        "target": f"< {target:g} s",
                        "met": seconds < target,
                        "command": COMMAND,
                        "note": f"{jobs:,} jobs; median of {rounds if baseline else REPEATS}"
                        + (
                            ""
                            if seconds < target
                            else f"; {SLOW_BIG if copies > 1 else SLOW_SMALL}"
                        ),
                    }
                )
            rows.append(
                {
                    "figure": f"Peak RSS of a dashboard process computing one page, {label}",
                    "value": f"{peak:.0f} MB",
                    "target": "-",
                    "met": None,
                    "command": COMMAND,
                    "note": "the largest over the pages and repetitions: ru_maxrss of the forked "
                    "child, which counts the imported dashboard's pages only as far as the child "
                    "touched them (not comparable with figures from fresh interpreters)",
                }
            )
            if copies > 1:
                path.unlink()
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _serve(sys.argv[2])
    else:
        repeats = int(sys.argv[2]) if len(sys.argv) > 2 else REPEATS
        print(json.dumps(_all_pages(sys.argv[1], repeats)))
