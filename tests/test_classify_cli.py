"""`ciflake classify FILE... [--json]` through click's CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ciflake.cli import cli
from collector.classify.departures import parse_departures
from tests.support.classify_corpus import CORPUS_DIR


def test_json_lines_have_exactly_the_documented_keys() -> None:
    files = [str(CORPUS_DIR / "oom_cuda_torch.log"), str(CORPUS_DIR / "net_connection_reset.log")]
    result = CliRunner().invoke(cli, ["classify", "--json", *files])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [list(row) for row in rows] == [
        ["path", "category", "rule", "signature", "line_number", "line"]
    ] * 2
    assert [row["category"] for row in rows] == ["oom", "network"]


def test_missing_file_reported_after_the_others_with_status_2(tmp_path) -> None:
    good = CORPUS_DIR / "dep_megatron_module.log"
    result = CliRunner().invoke(cli, ["classify", "--json", str(tmp_path / "nope.log"), str(good)])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["category"] == "missing_dependency"
    assert "nope.log" in result.stderr and "Traceback" not in result.stderr


def test_table_output_shows_markup_like_text_verbatim(tmp_path) -> None:
    log = tmp_path / "job.log"
    log.write_text("[/bold] RuntimeError: [rank0] broke\n")
    result = CliRunner().invoke(cli, ["classify", str(log)])
    assert result.exit_code == 0, result.output
    assert "[/bold] RuntimeError: [rank0] broke" in result.output


def test_explain_names_the_winner_the_cause_it_followed_and_the_losers(tmp_path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "[rank0]: KeyError: 'old_log_probs'\n"
        "[rank1]:[E801 10:00:05 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE) ran for 1800011 milliseconds\n"
        "vllm 0.8.5 requires torch==2.6.0, but you have torch 2.7.1 which is incompatible.\n"
    )
    result = CliRunner().invoke(cli, ["classify", "--explain", str(log)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{log}: unknown (rule 'Python programming error', line 1)"
    assert lines[1] == "  won: the earlier cause that 'collective timeout' followed"
    assert "- collective timeout [timeout], line 2: a consequence: yields to" in result.output
    assert "- pip resolution failed [missing_dependency], line 3: weak" in result.output


def test_explain_json_carries_every_step(tmp_path) -> None:
    log = tmp_path / "job.log"
    log.write_text("FAILED tests/t.py::x - AttributeError: module 'torch' has no attribute 'q'\n")
    result = CliRunner().invoke(cli, ["classify", "--json", "--explain", str(log)])
    row = json.loads(result.output)
    assert [step["rule"] for step in row["explanation"]][:2] == [
        "Python programming error",
        "pytest failed",
    ]
    assert set(row["explanation"][0]) == {"rule", "category", "line_number", "line", "verdict"}


def test_explain_names_the_departures_from_the_procedure_that_shaped_a_decision(tmp_path) -> None:
    """rules.toml's [[departure]] tables: by a line of the log, the winner's verdict, or the
    category; a decision none of them shaped names none."""
    cancelled = tmp_path / "cancelled.log"
    cancelled.write_text("step 3 ok\n##[error]The operation was canceled.\n", encoding="utf-8")
    weak = CORPUS_DIR / "net_pip_retry_weak_excerpt.log"
    guard = CORPUS_DIR / "cfg_missing_script.log"
    plain = CORPUS_DIR / "oom_cuda_torch.log"
    files = [str(p) for p in (cancelled, weak, guard, plain)]
    result = CliRunner().invoke(cli, ["classify", "--explain", "--json", *files])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [[d["name"] for d in row["departures"]] for row in rows] == [
        ["a cancelled operation names no cause"],
        ["weak lines decide when nothing else does"],
        ["ciflake's own category for the CI definition"],
        [],
    ]
    assert (
        rows[0]["departures"][0]["step"] == "1"
        and "boilerplate" in rows[0]["departures"][0]["reason"]
    )
    text = CliRunner().invoke(cli, ["classify", "--explain", str(cancelled)]).output
    assert "departs from the labelling procedure, step 1 (docs/classifier.md, section 7):" in text
    assert '"The operation was canceled." is boilerplate here, not infra' in text


def test_a_departure_that_could_never_apply_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a line, a verdict or a category"):
        parse_departures('[[departure]]\nname = "x"\nstep = "1"\nreason = "r"\n')
