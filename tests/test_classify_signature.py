"""Signatures: stable for one root cause across runs, different across root causes."""

from __future__ import annotations

from collector.classify import classify_log
from collector.classify.signature import normalise, signature

OOM = (
    "{ts} (WorkerDict pid={pid}) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "{gib} GiB. GPU {rank} has a total capacity of 44.52 GiB of which {free} MiB is free. "
    "See {path}/fsdp_workers.py after {secs}s on 10.0.{ip}.17"
)


def _log(**values: object) -> str:
    return "noise line\n" * int(values.pop("pad", 0)) + OOM.format(**values) + "\n"


def test_same_log_same_signature() -> None:
    log = _log(
        ts="2026-06-01T12:00:00.1Z", pid=12, gib=1.5, rank=3, free=301, path="/a/b", secs=9, ip=3
    )
    assert classify_log(log).signature == classify_log(log).signature


def test_numbers_paths_timestamps_ranks_durations_do_not_change_it() -> None:
    a = _log(
        ts="2026-06-01T12:00:00.1Z", pid=12, gib=1.5, rank=3, free=301, path="/a/b", secs=9, ip=3
    )
    b = _log(
        ts="2026-08-13T04:05:06.9Z",
        pid=9981,
        gib=20,
        rank=7,
        free=1,
        path="/x/y/z",
        secs=611,
        ip=200,
        pad=40,
    )
    first, second = classify_log(a), classify_log(b)
    assert first.line != second.line and first.line_number != second.line_number
    assert first.signature == second.signature


def test_different_root_causes_differ() -> None:
    oom = classify_log(_log(ts="", pid=1, gib=1, rank=0, free=1, path="/a/b", secs=1, ip=1))
    module = classify_log("ModuleNotFoundError: No module named 'megatron'\n")
    other_module = classify_log("ModuleNotFoundError: No module named 'mbridge'\n")
    assert len({oom.signature, module.signature, other_module.signature}) == 3


def test_normalise_masks_run_specific_details() -> None:
    text = (
        "rank 3 at 0x7f2b1c on 10.0.3.17:29500 id 5f1c2a9e-1b2c-4d5e-8f90-123456789abc "
        "file /usr/lib/x.so took 12.5s https://hf-mirror.com/api/x/y"
    )
    assert normalise(text) == (
        "rank <n> at <hex> on <ip> id <uuid> file <path> took <n>s https://hf-mirror.com/<path>"
    )
    assert signature("r", "a 1") == signature("r", "a 2") != signature("s", "a 1")


def test_the_runner_named_in_githubs_messages_does_not_change_it() -> None:
    """One time limit on two runners is one signature (a triage issue each would be noise)."""
    limit = "The job running on runner {} has exceeded the maximum execution time of 30 minutes."
    lost = "The self-hosted runner: {} lost communication with the server. Verify the machine"
    for message in (limit, lost):
        one, other = (message.format(name) for name in ("vemlp-l20x8-q0bsx-runner", "GPU box 7"))
        assert normalise(one) == normalise(other) and "<runner>" in normalise(one)
        assert signature("timeout", one) == signature("timeout", other)
