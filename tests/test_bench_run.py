"""bench.run rewrites RESULTS.md's rows of the benchmarks it ran, keeps the others', and keeps
the hand-kept first reads, which no run may replace."""

from __future__ import annotations

import sys
import types

from bench import run

BEFORE = """# Benchmark results

Each benchmark's rows come from its last run:

- `bench.other`: run 2026-12-01 00:00 UTC on a machine, 5 s.
- `bench.fake`: run 2026-12-01 00:00 UTC on a machine, 5 s.

| figure | value | target | met | command |
| --- | --- | --- | --- | --- |
| Other figure | 1 | - | - | `python -m bench.run other` |
| Fake figure | 1 | - | - | `python -m bench.run fake` |

## First reads

Taken once.

- `set.jsonl`: **9/10 = 90.0% exact**, before any change.

## Notes

- **Other figure**: kept
- **Fake figure**: replaced
"""


def _run_fake(tmp_path, monkeypatch, before: str, command: str) -> str:
    """RESULTS.md after ``python -m bench.run fake`` over ``before``: the fake benchmark
    measures "Fake figure" again (value 2, note "new"), its row naming ``command``."""
    results = tmp_path / "RESULTS.md"
    results.write_text(before, encoding="utf-8")
    fake = types.ModuleType("bench.fake")
    fake.measure = lambda: [  # type: ignore[attr-defined]
        {"figure": "Fake figure", "value": "2", "target": "-", "met": None,
         "command": command, "note": "new"}
    ]  # fmt: skip
    monkeypatch.setitem(sys.modules, "bench.fake", fake)
    monkeypatch.setattr(run, "RESULTS", results)
    monkeypatch.setattr(sys, "argv", ["bench.run", "fake"])
    assert run.main() == 0
    return results.read_text(encoding="utf-8")


def test_a_partial_run_keeps_other_rows_and_the_first_reads(tmp_path, monkeypatch):
    after = _run_fake(tmp_path, monkeypatch, BEFORE, "python -m bench.run fake")
    assert "| Other figure | 1 |" in after and "| Fake figure | 2 |" in after
    assert "| Fake figure | 1 |" not in after
    assert "## First reads\n\nTaken once.\n\n- `set.jsonl`: **9/10 = 90.0% exact**" in after
    assert after.count("## First reads") == 1
    assert after.index("## First reads") < after.index("## Notes")
    assert "- **Other figure**: kept" in after and "- **Fake figure**: new" in after
    assert "replaced" not in after


def test_no_first_reads_section_adds_none(tmp_path, monkeypatch):
    results = tmp_path / "RESULTS.md"
    results.write_text(BEFORE.split("## First reads")[0], encoding="utf-8")
    monkeypatch.setattr(run, "RESULTS", results)
    assert run._first_reads() == []


def test_a_row_whose_command_has_arguments_is_replaced_too(tmp_path, monkeypatch):
    results = tmp_path / "RESULTS.md"
    results.write_text(
        BEFORE.replace("`python -m bench.run fake`", "`python -m bench.fake set2.jsonl`"),
        encoding="utf-8",
    )
    monkeypatch.setattr(run, "RESULTS", results)
    table, notes, _ = run._kept_rows(["fake"])
    assert table == ["| Other figure | 1 | - | - | `python -m bench.run other` |"]
    assert notes == ["- **Other figure**: kept"]


def test_a_figure_measured_again_replaces_its_row_whatever_its_command(tmp_path, monkeypatch):
    """grep's own row names grep's command, not the benchmark's: it is replaced all the same."""
    grep = "grep -c x bench/out/a.log"
    before = BEFORE.replace("`python -m bench.run fake`", f"`{grep}`")
    after = _run_fake(tmp_path, monkeypatch, before, grep)
    assert after.count("| Fake figure |") == 1 and "| Fake figure | 2 |" in after
    assert after.count("- **Fake figure**") == 1
