"""Engine behaviour: streaming across chunks, odd inputs, job-level evidence, facts, green logs."""

from __future__ import annotations

import io
import os

import pytest

from collector.classify import classify_job, classify_log, log_stream

TS = "2026-06-01T12:00:00.1234567Z "


def test_line_number_and_context_survive_chunk_boundaries(monkeypatch) -> None:
    monkeypatch.setattr(log_stream, "CHUNK_BYTES", 64)
    lines = [f"{TS}step {i} fine" for i in range(200)]
    lines[150] = f"{TS}ModuleNotFoundError: No module named 'megatron'"
    result = classify_log(("\n".join(lines) + "\n").encode())
    assert (result.category, result.line_number) == ("missing_dependency", 151)
    assert result.context == [f"step {i} fine" for i in range(145, 150)]


def test_last_match_of_a_rule_counts_and_priority_beats_position() -> None:
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
        "ModuleNotFoundError: No module named 'x'\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n"
        "AssertionError: later but lower priority\n"
    )
    result = classify_log(log)
    assert (result.category, result.line_number) == ("oom", 3)


@pytest.mark.parametrize(
    "source",
    [b"", b"\x00\x01\x02\xff" * 1000, "caf\xe9 Error: bad".encode("latin-1"), io.BytesIO(b"")],
    ids=["empty", "binary", "invalid-utf8", "empty-stream"],
)
def test_odd_inputs_do_not_crash(source) -> None:
    result = classify_log(source)
    assert result.category == "unknown"


def test_invalid_utf8_line_is_still_shown() -> None:
    result = classify_log(b"x\nRuntimeError: caf\xe9 broke\n")
    assert result.line == "RuntimeError: caf\ufffd broke"


def test_boilerplate_never_decides_but_exit_137_and_127_do() -> None:
    boiler = classify_log("##[error]Process completed with exit code 1.\n")
    assert (boiler.category, boiler.line) == ("unknown", None)
    assert classify_log("##[error]Process completed with exit code 137.\n").category == "oom"
    assert classify_log("##[error]Process completed with exit code 127.\n").category == "ci_config"


def test_job_level_evidence() -> None:
    assert classify_job(no_jobs=True).category == "ci_config"
    assert classify_job(job_name="setup").category == "infra"
    npu = classify_job(
        failed_steps=["Check NPU and CANN info"], log="ImportError: cannot import name 'x'\n"
    )
    assert (npu.category, npu.line) == ("npu_env", "ImportError: cannot import name 'x'")
    limit = "The job running on runner r1 has exceeded the maximum execution time of 10 minutes."
    assert classify_job(annotations=[limit]).category == "timeout"
    shutdown = classify_job(annotations=["The runner has received a shutdown signal."])
    assert (shutdown.category, shutdown.line_number) == ("infra", None)
    assert classify_job().category == "unknown"


def test_environment_facts() -> None:
    log = (
        f"{TS}| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |\n"
        f"{TS}|   0  NVIDIA H100 80GB HBM3          On  |   00000000:0F:00.0 Off |\n"
        f"{TS}torch                 2.7.1\n{TS}torch_npu             2.7.1rc1\n"
        f"{TS}sglang==0.4.9\n{TS}version=8.1.RC1\n"
        f"{TS}| 0     910B3               | OK            | 93.5   36 |\n"
    )
    assert classify_log(log).env == {
        "driver": "550.54.15",
        "cuda": "12.4",
        "gpu": "NVIDIA H100 80GB HBM3",
        "torch": "2.7.1",
        "torch_npu": "2.7.1rc1",
        "sglang": "0.4.9",
        "cann": "8.1.RC1",
        "npu": "910B3",
    }


def test_green_log_moves_the_catch_all_to_a_new_line() -> None:
    failed = "RuntimeError: mask lost\nError: cleanup skipped for /tmp/ray/1\n"
    green = "Error: cleanup skipped for /tmp/ray/2\n"
    assert classify_log(failed).line == "Error: cleanup skipped for /tmp/ray/1"
    assert classify_log(failed, green_log=green).line == "RuntimeError: mask lost"


def test_path_and_stream_sources(tmp_path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"ConnectionResetError: [Errno 104] Connection reset by peer\n")
    assert classify_log(path).category == "network"
    with open(path, "rb") as stream:
        assert classify_log(stream).category == "network"


@pytest.mark.slow
def test_200_mb_single_line(tmp_path) -> None:
    path = tmp_path / "one-line.log"
    with open(path, "wb") as out:
        block = os.urandom(1 << 20).replace(b"\n", b" ")
        for _ in range(200):
            out.write(block)
        out.write(b" RuntimeError: CUDA error: out of memory")
    result = classify_log(path)
    assert result.category == "oom" and result.line_number == 1
    assert len(result.line) <= 2000
