"""``make bench``: run every benchmark, print one row per figure, write bench/RESULTS.md.

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


def main() -> int:
    selected = sys.argv[1:] or list(BENCHMARKS)
    rows: list[dict] = []
    started = time.monotonic()
    for name in selected:
        module = importlib.import_module(name if name.startswith("bench.") else f"bench.{name}")
        print(f"== {module.__name__}", flush=True)
        for row in module.measure():
            rows.append(row)
            print(
                f"{row['figure']}: {row['value']} (target {row['target']}, {_met(row)})", flush=True
            )
    elapsed = time.monotonic() - started
    lines = [
        "# Benchmark results",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}; {elapsed:.0f} s in all.",
        "Reproduce everything with `make bench`; each row names its own command.",
        "",
        "| figure | value | target | met | command |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['figure']} | {r['value']} | {r['target']} | {_met(r)} | `{r['command']}` |"
        for r in rows
    ]
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- **{r['figure']}**: {r['note']}" for r in notes]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
