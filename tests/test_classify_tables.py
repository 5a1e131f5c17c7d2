"""tables.toml: every row adds patterns to a rule, and a fixture of ours shows each row at work."""

from __future__ import annotations

import re
import tomllib

import pytest

from collector.classify import classify_log, load_rules
from collector.classify.rules import DEFAULT_RULES_PATH, TABLE_KINDS, TABLES_NAME, _table_patterns
from tests.support.classify_corpus import CASES, expected_line

TABLES = tomllib.loads(DEFAULT_RULES_PATH.with_name(TABLES_NAME).read_text(encoding="utf-8"))
ROWS = [(kind, row) for kind in TABLE_KINDS for row in TABLES.get(kind, [])]


def _row_id(item: tuple[str, dict]) -> str:
    kind, row = item
    first = (row.get("names") or row.get("codes") or row.get("numbers") or [row.get("name")])[0]
    return f"{kind}:{first}"


@pytest.mark.parametrize("item", ROWS, ids=[_row_id(i) for i in ROWS])
def test_every_table_row_decides_a_fixture(item: tuple[str, dict]) -> None:
    kind, row = item
    patterns = [re.compile(p) for p in _table_patterns(row, kind)]
    lines = [
        line
        for case in CASES
        if case["rule"] == row["rule"] and (line := expected_line(case)) is not None
    ]
    assert any(p.search(line) for p in patterns for line in lines), (
        f"no fixture decided by rule {row['rule']!r} shows this {kind} row"
    )


def test_table_rows_reach_their_rules() -> None:
    rules = {rule.name: rule for rule in load_rules().rules}
    for kind, row in ROWS:
        assert set(_table_patterns(row, kind)) <= set(rules[row["rule"]].patterns)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("OSError: [Errno 28] No space left on device: '/tmp/ckpt'", "disk full"),
        ("write /var/lib/docker/overlay2/l/x: no space left on device", "disk full"),
        ("error: ENOSPC: no space left on device, write", "disk full"),
        (
            "RuntimeError: DefaultCPUAllocator: Error code 12 (Cannot allocate memory)",
            "host OOM killer",
        ),
        ("EADDRINUSE: address already in use 0.0.0.0:29500", "rendezvous failed"),
        (
            "NPU function error: call aclrtSynchronizeStream failed, error code is 507046",
            "NPU task timeout",
        ),
        ("torch.distributed.DistBackendError: NCCL communicator was aborted", "NCCL or Gloo error"),
    ],
)
def test_one_row_catches_a_family_in_many_forms(line: str, rule: str) -> None:
    assert classify_log(line + "\n").rule == rule
