"""The parts that make `ciflake classify` fast keep its answers: the cached Hyperscan database,
the shared newline count of a block, and a CLI that does not import the database layer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from collector.classify import log_stream, pattern_matcher
from collector.classify.log_stream import LogScanner
from collector.classify.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = ["CUDA out of memory", r"\b[Ee]rror\b", r"torch==[0-9]"]
BLOCK = b"x\nCUDA out of memory\nan error here\ntorch==2.6.0\n" * 50

pytestmark = pytest.mark.skipif(
    pattern_matcher.hyperscan is None, reason="needs the Hyperscan wheel"
)


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / pattern_matcher.CACHE_SUBDIR


def test_compiled_database_is_cached_and_scans_the_same(cache: Path) -> None:
    compiled = pattern_matcher.Scanner(PATTERNS, first_only=frozenset({2})).scan(BLOCK)
    (cached_file,) = cache.iterdir()
    loaded = pattern_matcher.Scanner(PATTERNS, first_only=frozenset({2}))
    assert loaded.scan(BLOCK) == compiled
    assert loaded.scan(BLOCK) == compiled
    assert [pid for pid, _ in compiled].count(2) == 1  # first_only survives the cache
    other = pattern_matcher.Scanner(PATTERNS)  # other flags: another file
    assert len(list(cache.iterdir())) == 2
    assert [pid for pid, _ in other.scan(BLOCK)].count(2) == 50
    assert cached_file.exists()


def test_damaged_cache_is_replaced_by_compiling(cache: Path) -> None:
    expected = pattern_matcher.Scanner(PATTERNS).scan(BLOCK)
    (cached_file,) = cache.iterdir()
    good = cached_file.read_bytes()
    for damage in (b"", good[:100], good[:-1] + bytes([good[-1] ^ 1]), b"\0" * len(good)):
        cached_file.write_bytes(damage)
        assert pattern_matcher.Scanner(PATTERNS).scan(BLOCK) == expected
        assert cached_file.read_bytes() == good


def test_unwritable_cache_falls_back_silently(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert pattern_matcher.Scanner(PATTERNS).scan(BLOCK)
    assert blocker.read_text() == "not a directory"
    monkeypatch.setattr(pattern_matcher, "cache_dir", lambda: None)
    assert pattern_matcher.Scanner(PATTERNS).scan(BLOCK)


@pytest.mark.parametrize("chunk", [64, 300, 4096, 4 << 20])
def test_line_numbers_are_the_same_whatever_the_chunk(monkeypatch, chunk: int) -> None:
    lines = [f"2026-06-01T12:00:00.0000000Z step {i} fine" for i in range(3000)]
    for i in range(7, 3000, 211):
        lines[i] = f"2026-06-01T12:00:00.0000000Z torch.OutOfMemoryError: CUDA out of memory {i}"
        lines[i + 3] = f"2026-06-01T12:00:00.0000000Z RuntimeError: broke at {i}"
    log = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr(log_stream, "CHUNK_BYTES", chunk)
    result = LogScanner(load_rules()).scan(io.BytesIO(log), keep_candidates=50)
    for hit in [*result.hits.values(), *result.candidates]:
        assert hit.line_number is not None
        assert lines[hit.line_number - 1].endswith(hit.line), hit
    oom = [h for h in result.hits.values() if "CUDA out of memory" in h.line]
    assert [h.line_number for h in oom] == [7 + 211 * 14 + 1]


def test_classify_command_does_not_import_the_database_layer(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    probe = (
        "import sys\n"
        "from ciflake.cli import main\n"
        "sys.argv = ['ciflake', 'classify', '--json', sys.argv[1]]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    heavy = {'sqlalchemy', 'pandas', 'streamlit', 'github', 'fakehub', 'store.engine'}\n"
        "    print(sorted(heavy & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(log)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["category"] == "oom"
    assert done.stderr.strip().splitlines()[-1] == "[]"
