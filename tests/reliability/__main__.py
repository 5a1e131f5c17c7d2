"""``make reliability``: run the reliability suites at full size, then print one table of what
they tried (trials, faults injected by kind, bad inputs) and what went wrong (database
mismatches, crashes, leaks). Exit status 0 only when pytest passed and those are all zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.reliability.harness import TALLY_ENV

HERE = Path(__file__).parent
SUITES = ("faults", "crash", "bad_inputs", "security", "concurrency", "triage")
COLUMNS = ("trials", "faults", "bad_inputs", "mismatches", "crashes", "leaks")
PROBLEMS = ("mismatches", "crashes", "leaks")
EXTRAS = ("kills", "reads", "commits")


def totals(entries: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    """Per suite, the sum of each count; ``faults`` per kind under ``fault:KIND``."""
    by_suite: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in entries:
        counts = by_suite[entry["suite"]]
        for key, value in entry.items():
            if key == "faults":
                counts.update({f"fault:{kind}": n for kind, n in value.items()})
                counts["faults"] += sum(value.values())
            elif key != "suite":
                counts[key] += value
    return by_suite


def table(by_suite: dict[str, Counter[str]]) -> str:
    header = ("suite", *(c.replace("_", " ") for c in COLUMNS), "also")
    rows = []
    for suite in sorted(by_suite, key=lambda s: (SUITES + (s,)).index(s)):
        counts = by_suite[suite]
        also = ", ".join(f"{counts[k]} {k}" for k in EXTRAS if counts[k])
        rows.append((suite, *(str(counts[c]) for c in COLUMNS), also))
    total = Counter[str]()
    for counts in by_suite.values():
        total.update(counts)
    rows.append(("total", *(str(total[c]) for c in COLUMNS), ""))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        for row in (header, *rows)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    kinds = sorted(
        (k.removeprefix("fault:"), n) for k, n in total.items() if k.startswith("fault:")
    )
    lines.append("faults injected by kind: " + ", ".join(f"{k} {n}" for k, n in kinds))
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        tally = Path(scratch) / "tally.jsonl"
        env = {**os.environ, "CIFLAKE_RELIABILITY": "full", TALLY_ENV: str(tally)}
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(HERE)]
        status = subprocess.call([*command, *sys.argv[1:]], env=env)
        lines = tally.read_text().splitlines() if tally.exists() else []
    by_suite = totals([json.loads(line) for line in lines])
    print("\nciflake reliability (make reliability)\n")
    print(table(by_suite))
    problems = sum(counts[p] for counts in by_suite.values() for p in PROBLEMS)
    print(f"\npytest exit status {status}; mismatches + crashes + leaks = {problems}")
    return status or int(problems > 0)


if __name__ == "__main__":
    sys.exit(main())
