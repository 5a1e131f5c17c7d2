"""The root-cause procedure (collector/classify/rootcause.py), one mechanism per test."""

from __future__ import annotations

import pytest

from collector.classify import classify_log

WATCHDOG = (
    "[rank1]:[E801 10:00:05.1 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE) ran for 1800011 milliseconds"
)


def _verdicts(result) -> dict[str, str]:
    return {step.rule: step.verdict for step in result.explanation}


def test_pytest_wrapper_takes_the_category_of_the_error_it_carries() -> None:
    carried = classify_log(
        "FAILED tests/test_io.py::test_load - AttributeError: module 'torch' has no attribute 'x'\n"
    )
    assert (carried.category, carried.rule) == ("unknown", "Python programming error")
    assert _verdicts(carried)["pytest failed"].startswith("a wrapper: carries")


def test_pytest_wrapper_with_an_error_no_rule_knows_is_that_unknown_error() -> None:
    result = classify_log("FAILED tests/test_io.py::test_len - ValueError: got 127, not 128\n")
    assert (result.category, result.rule, result.line_number) == (
        "unknown",
        "error-looking line",
        1,
    )
    assert "an error no rule knows" in _verdicts(result)["pytest failed"]


@pytest.mark.parametrize(
    "carried", ["assert 127 == 128", "Failed: DID NOT RAISE <class 'ValueError'>", ""]
)
def test_pytest_wrapper_stands_for_a_tests_own_failure(carried: str) -> None:
    line = "FAILED tests/test_io.py::test_len" + (f" - {carried}" if carried else "")
    result = classify_log(line + "\n")
    assert (result.category, result.rule) == ("test_failure", "pytest failed")


def test_a_bare_error_header_is_no_evidence() -> None:
    retry = (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', "
        "port=443): Read timed out. (read timeout=15)\")': /simple/numpy/\n"
    )
    cut = 'ERROR: Exception:\nTraceback (most recent call last):\n  File "pip/x.py", line 3\n'
    result = classify_log(retry + cut)
    assert (result.category, result.line_number) == ("network", 1)
    # behind a logger's level and a Ray prefix too: the error above it is the last one
    header = (
        "(EngineCore pid=7) ERROR 06-01 10:00:00 [core.py:900] Traceback (most recent call last):"
    )
    result = classify_log(f"RuntimeError: shard 3 is corrupt\n{header}\n")
    assert (result.category, result.line_number) == ("unknown", 1)


def test_ray_wrapper_carries_the_class_of_the_task_error() -> None:
    line = "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.update() (pid=7)"
    result = classify_log(line + "\n")
    assert (result.category, result.rule, result.line) == ("oom", "CUDA out of memory", line)
    assert result.explanation[0].verdict == "won: carried by 'Ray task failed'"


def test_a_consequence_yields_to_a_cause_logged_before_it() -> None:
    log = f"[rank0]: KeyError: 'old_log_probs'\n{WATCHDOG}\n"
    result = classify_log(log)
    assert (result.category, result.rule, result.line_number) == (
        "unknown",
        "Python programming error",
        1,
    )
    assert "yields to 'Python programming error'" in _verdicts(result)["collective timeout"]


def test_a_consequence_before_the_other_error_is_the_cause() -> None:
    result = classify_log(f"{WATCHDOG}\n[rank0]: KeyError: 'old_log_probs'\n")
    assert (result.category, result.rule) == ("timeout", "collective timeout")


def test_a_generic_code_is_not_an_earlier_cause() -> None:
    log = f"EZ9999: Inner Error!\n{WATCHDOG}\n"
    assert classify_log(log).rule == "collective timeout"


def test_warning_lines_are_weak_evidence() -> None:
    retry = (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'NewConnectionError(': Failed to establish a new connection: "
        "[Errno 113] No route to host')': /simple/torch/\n"
    )
    weak = classify_log(retry)
    assert (weak.category, weak.rule) == ("network", "host unreachable")
    assert "weak" in weak.explanation[0].verdict
    # a strong error line, even one no rule knows, outranks weak evidence
    assert classify_log(retry + "RuntimeError: checkpoint shard 3 is corrupt\n").category == (
        "unknown"
    )


def test_advice_is_never_evidence() -> None:
    log = (
        "The actor died unexpectedly before finishing this task. There are some potential root "
        "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage "
        "(oom-kill). (2) ray stop --force is called.\n"
    )
    result = classify_log(log)
    assert (result.category, result.rule) == ("distributed", "Ray actor or node died")


def test_an_assertion_raised_outside_test_code_is_not_a_test_failure() -> None:
    trainer = (
        '  File "/__w/verl/verl/verl/trainer/ppo/core_algos.py", line 88, in agg_loss\n'
        "    assert loss_mask.sum() > 0\n"
        "AssertionError: empty loss mask\n"
    )
    test = trainer.replace("verl/trainer/ppo/core_algos.py", "tests/trainer/test_core_algos.py")
    assert classify_log(trainer).category == "unknown"
    assert classify_log(test).rule == "assertion failed"


@pytest.mark.parametrize(
    ("log", "line"),
    [
        (
            "a\r\nModuleNotFoundError: No module named 'x'\r\nb\r\n",
            "ModuleNotFoundError: No module named 'x'",
        ),
        ("a\nModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'"),
        (
            '{"log": "step 1\\nModuleNotFoundError: No module named \'x\'\\nexit"}\n',
            "ModuleNotFoundError: No module named 'x'",
        ),
        (
            "^[[31mModuleNotFoundError: No module named 'x'^[[0m\n",
            "ModuleNotFoundError: No module named 'x'",
        ),
        (
            "[1;36m(W pid=1)[0;0m ModuleNotFoundError: No module named 'x'\n",
            "(W pid=1) ModuleNotFoundError: No module named 'x'",
        ),
        (
            "> ModuleNotFoundError: No module named 'x'\n",
            "> ModuleNotFoundError: No module named 'x'",
        ),
    ],
    ids=["crlf", "no-final-newline", "json-escaped", "caret-ansi", "ansi-without-escape", "quoted"],
)
def test_noise_around_a_line_does_not_hide_it(log: str, line: str) -> None:
    result = classify_log(log)
    assert (result.category, result.line) == ("missing_dependency", line)


def test_levels_are_read_behind_prefixes() -> None:
    log = (
        "(EngineCore_DP0 pid=9) (RayWorkerWrapper pid=3) [rank2]:[W801 10:00:01.2 socket.cpp:460] "
        "[c10d] waitForInput: socket SocketImpl(fd=9) timed out after 900000ms\n"
    )
    result = classify_log(log)
    assert (result.category, result.rule) == ("timeout", "collective timeout")
    assert "weak" in result.explanation[0].verdict


def test_a_name_that_ends_its_line_is_dated_to_that_line() -> None:
    result = classify_log(f"[rank0]: NotImplementedError\n{WATCHDOG}\n")
    assert (result.category, result.line_number) == ("unknown", 1)


@pytest.mark.parametrize(
    "log",
    [
        '{"log": "[I ProcessGroupNCCL.cpp:10] created comm\\nValueError: timeout must be 5\\n"}\n',
        "prefix CUDA runtime ready\rValueError: bad config: out of memory budget\n",
    ],
    ids=["json-escaped", "carriage-return"],
)
def test_a_pattern_does_not_run_on_from_another_logical_line(log: str) -> None:
    assert classify_log(log).category == "unknown"


def test_a_consequence_does_not_yield_to_a_cause_rejected_on_its_own() -> None:
    trainer = (
        '  File "/__w/verl/verl/verl/trainer/ppo/core_algos.py", line 88, in agg_loss\n'
        "    assert loss_mask.sum() > 0\n"
        "AssertionError: empty loss mask\n"
    )
    assert classify_log(trainer + WATCHDOG + "\n").rule == "collective timeout"


def test_wrappers_inside_wrappers_are_followed() -> None:
    line = "FAILED tests/t.py::x - ray.exceptions.RayTaskError(OutOfMemoryError): ray::W.f()\n"
    assert (classify_log(line).category, classify_log(line).rule) == ("oom", "CUDA out of memory")


@pytest.mark.parametrize(
    "log", ["step 5\r\nKilled\r\n", '{"log": "step 5\\nKilled\\n"}\n'], ids=["crlf", "json"]
)
def test_line_end_patterns_hold_before_a_cr_or_an_escaped_line_end(log: str) -> None:
    assert classify_log(log).category == "oom"


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "tests/t.py::test_raises[TimeoutError] PASSED [ 50%]\n"
            "FAILED tests/t.py::test_score - assert 0.51 == 0.5\n",
            "test_failure",
        ),
        ("Tokenizer encoded 207001 tokens\nRuntimeError: x\n", "unknown"),
        ("retrieved 507048 passages\nRuntimeError: x\n", "unknown"),
        ("Initialising ProcessGroupNCCL with timeout 1800s\nRuntimeError: x\n", "unknown"),
    ],
    ids=["parametrize-id", "token-count", "passage-count", "nccl-config"],
)
def test_ordinary_output_is_no_evidence(log: str, category: str) -> None:
    assert classify_log(log).category == category


@pytest.mark.parametrize(
    "prefix",
    ["[WARNING|trainer.py:88] 2026-08-01 10:00:00,123 >>", "[2026-08-01 10:00:00,123] [INFO]"],
    ids=["transformers", "deepspeed"],
)
def test_more_log_formats_read_as_weak(prefix: str) -> None:
    log = f"{prefix} Connection reset by peer, retrying\nRuntimeError: shard 3 is corrupt\n"
    assert classify_log(log).category == "unknown"


KILLED = "##[error]Process completed with exit code 137."


@pytest.mark.parametrize(
    "shown",
    [
        '{"Status":"exited","OOMKilled":false,"ExitCode":137}',  # docker inspect's state
        "oom_kill 0",  # the cgroup's memory.events
        "trainer.service: Failed with result 'signal'.",  # systemd's unit result
        "the runner was not OOM-killed",
    ],
)
def test_a_sigkill_shown_not_to_be_memory_is_the_host(shown: str) -> None:
    """A bare SIGKILL is memory by default (step 2), unless the log shows memory was not
    exhausted (step 1); the default it turned stays in the explanation."""
    assert classify_log(f"{KILLED}\n").category == "oom"
    result = classify_log(f"{shown}\n{KILLED}\n")
    assert (result.category, result.rule, result.line_number) == (
        "infra",
        "SIGKILL shown not to be memory",
        1,
    )
    verdict = _verdicts(result)["killed by SIGKILL (exit 137)"]
    assert verdict == "qualified by 'SIGKILL shown not to be memory'"


def test_a_qualifier_never_decides_alone_nor_over_an_explicit_oom() -> None:
    state = '{"Status":"exited","OOMKilled":false,"ExitCode":1}'
    alone = classify_log(f"ValueError: bad batch size\n{state}\n")
    assert (alone.category, alone.line_number) == ("unknown", 1)
    assert _verdicts(alone)["SIGKILL shown not to be memory"].startswith("qualifies only ")
    explicit = classify_log(f"torch.OutOfMemoryError: CUDA out of memory.\n{state}\n{KILLED}\n")
    assert (explicit.category, explicit.rule) == ("oom", "CUDA out of memory")
    # Docker's own "not OOM-killed" is no OOM-killer line either
    assert classify_log(f"{state}\n").category != "oom"
