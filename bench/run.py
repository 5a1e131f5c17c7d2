"""``make bench``: run every benchmark, print one row per figure, write bench/RESULTS.md.
``python -m bench.run NAME...`` runs some of them and updates their rows, keeping the others.

Each benchmark module exposes ``measure() -> list[dict]`` with keys figure, value, target,
met (bool or None when there is no target), command and note (why a target is missed and what
would reach it).
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS = (
    "bench.classifier",
    "bench.real_logs",
    "bench.store",
    "bench.collector",
    "bench.dashboard",
    "bench.browser",
    "bench.demo",
)
RESULTS = Path(__file__).with_name("RESULTS.md")


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()}"


def _met(row: dict) -> str:
    return {True: "met", False: "NOT met", None: "-"}[row.get("met")]


RUN_LINE = "- `{name}`: run {when} UTC on {machine}, {seconds:.0f} s."


def _kept_rows(ran: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(table lines, note lines, run lines) of RESULTS.md's rows that the benchmarks in
    ``ran`` did not make: a run of some benchmarks updates their rows and their run lines,
    and keeps the others'."""
    if not RESULTS.exists():
        return [], [], []
    text = RESULTS.read_text(encoding="utf-8").splitlines()
    table_at = next((i for i, line in enumerate(text) if line.startswith("| figure")), len(text))
    names = {_module(name) for name in ran}
    runs = [
        line
        for line in text[1:table_at]
        if line.startswith("- `bench.") and line.split("`")[1] not in names
    ]
    ran_commands = tuple(f"bench.run {name.removeprefix('bench.')}`" for name in ran)
    ran_modules = tuple(f"m {_module(name)}`" for name in ran)
    with_arguments = tuple(f"m {_module(name)} " for name in ran)  # `python -m bench.x FILE`
    table, notes, kept_figures = [], [], set()
    for line in text:
        if line.startswith("| ") and not line.startswith(("| figure", "| ---")):
            command = line.rstrip(" |")
            if (
                not line.endswith(" |")
                or command.endswith(ran_commands + ran_modules)
                or any(module in command for module in with_arguments)
            ):
                continue
            table.append(line)
            kept_figures.add(line.split(" | ")[0].removeprefix("| "))
        elif line.startswith("- **"):
            figure = line.removeprefix("- **").split("**:", 1)[0]
            if figure in kept_figures:
                notes.append(line)
    return table, notes, runs


FIRST_READS = "## First reads"


def _first_reads() -> list[str]:
    """RESULTS.md's hand-kept section of first reads (a score taken once, on data nobody here
    had read yet, before any change made for it): a record no later run may replace. Plain
    bullets, not table rows nor ``- **`` notes, which the other readers of the file take."""
    if not RESULTS.exists():
        return []
    text = RESULTS.read_text(encoding="utf-8").splitlines()
    if FIRST_READS not in text:
        return []
    start = text.index(FIRST_READS)
    end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")), len(text))
    section = text[start:end]
    while not section[-1].strip():
        section.pop()
    return ["", *section]


def _module(name: str) -> str:
    return name if name.startswith("bench.") else f"bench.{name}"


def _order(module: str) -> int:
    return BENCHMARKS.index(module) if module in BENCHMARKS else len(BENCHMARKS)


def main() -> int:
    selected = sys.argv[1:] or list(BENCHMARKS)
    rows: list[dict] = []
    durations: dict[str, float] = {}
    started = time.monotonic()
    for name in selected:
        module = importlib.import_module(_module(name))
        print(f"== {module.__name__}", flush=True)
        begun = time.monotonic()
        measured = module.measure()
        durations[name] = time.monotonic() - begun
        for row in measured:
            rows.append(row)
            print(
                f"{row['figure']}: {row['value']} (target {row['target']}, {_met(row)})", flush=True
            )
    elapsed = time.monotonic() - started
    partial = set(selected) != set(BENCHMARKS)
    kept, kept_notes, kept_runs = _kept_rows(selected) if partial else ([], [], [])
    # a figure measured now replaces its old row, whatever command the row names (grep's)
    measured_now = {r["figure"] for r in rows}
    kept = [line for line in kept if line.split(" | ")[0].removeprefix("| ") not in measured_now]
    kept_notes = [
        line for line in kept_notes if line.removeprefix("- **").split("**:")[0] not in measured_now
    ]
    when, machine = f"{datetime.now(UTC):%Y-%m-%d %H:%M}", _machine()
    ran = [
        RUN_LINE.format(name=_module(name), when=when, machine=machine, seconds=seconds)
        for name, seconds in durations.items()
    ]
    lines = [
        "# Benchmark results",
        "",
        "Each benchmark's rows come from its last run:",
        "",
        *sorted([*kept_runs, *ran], key=lambda line: _order(line.split("`")[1])),
        "",
        "Reproduce everything with `make bench`; each row names its own command.",
        "",
        "| figure | value | target | met | command |",
        "| --- | --- | --- | --- | --- |",
        *kept,
    ]
    lines += [
        f"| {r['figure']} | {r['value']} | {r['target']} | {_met(r)} | `{r['command']}` |"
        for r in rows
    ]
    lines += _first_reads()
    notes = [f"- **{r['figure']}**: {r['note']}" for r in rows if r.get("note")]
    if notes or kept_notes:
        lines += ["", "## Notes", "", *kept_notes, *notes]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
