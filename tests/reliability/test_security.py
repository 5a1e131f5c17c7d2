"""Security checks: a canary token used for a collect, exports, a summary and the error paths
never shows up in the database file, output, logs, CSV files, summaries or exception text; the
dashboard reads the database read-only and shows log text as text; comment and CSV
neutralisation hold."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import text

import dashboard
from analytics.spreadsheet import for_spreadsheets
from ciflake.cli import cli
from collector.client import CollectError, GitHubClient
from reports.markdown import code_block, md_text
from store.engine import make_engine
from tests.reliability.harness import CANARY, canary_hub, fast_collect, leaks, record

SUITE = "security"


def _ciflake(env: dict[str, str], *args: str) -> tuple[int, bytes]:
    """``ciflake ARGS`` in a process of its own: (exit status, stdout and stderr)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CIFLAKE_", "GITHUB_"))}
    done = subprocess.run(
        [sys.executable, "-m", "ciflake", *args],
        env=base | env,
        capture_output=True,
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _in_process(runner: CliRunner, env: dict[str, str], *args: str) -> tuple[int, bytes]:
    """The same in this process (faster), with any exception's full text in the output."""
    result = runner.invoke(cli, list(args), env=env)
    crash = result.exception if not isinstance(result.exception, SystemExit) else None
    trace = "".join(traceback.format_exception(crash)) if crash else ""
    return result.exit_code, (result.output + trace).encode()


@pytest.mark.slow
def test_canary_token_never_written_or_printed(tmp_path, runner):
    """The first collect runs as a real process (real stderr, logging as configured); the
    other commands run in-process."""
    db = tmp_path / "ciflake.db"
    token_file = tmp_path / "secrets" / "token"
    token_file.parent.mkdir()
    token_file.write_text(CANARY)
    outputs: list[bytes] = []
    unexpected: list[str] = []
    with canary_hub() as hub:
        env = {"CIFLAKE_DB_URL": f"sqlite:///{db}", "CIFLAKE_API_URL": hub.base_url}
        runs = [
            ({**env, "GITHUB_TOKEN": CANARY}, ("collect", "--once", "--since", "2025-10-01"), 0),
            ({**env, "CIFLAKE_TOKEN_FILE": str(token_file)}, ("collect", "--once"), 0),
            (env, ("export", "runs", "--out", str(tmp_path / "runs.csv")), 0),
            (env, ("export", "before-after", "--out", str(tmp_path / "ba.csv")), 0),
            ({**env, "GITHUB_TOKEN": CANARY}, ("summary", "--since", "3650d"), 0),
            ({**env, "GITHUB_TOKEN": CANARY}, ("summary", "--since", "3650d", "--post"), None),
            ({**env, "GITHUB_TOKEN": CANARY + "x"}, ("collect", "--once"), 2),
            (
                {"GITHUB_TOKEN": CANARY, "CIFLAKE_API_URL": hub.base_url},
                ("--db", f"postgresql+psycopg://ciflake:{CANARY}@127.0.0.1:9/x", "collect"),
                2,
            ),
            ({**env, "GITHUB_TOKEN": CANARY}, ("config", "show"), 0),
        ]
        for index, (run_env, args, expected) in enumerate(runs):
            status, output = (
                _ciflake(run_env, *args) if index == 0 else _in_process(runner, run_env, *args)
            )
            outputs.append(output)
            if (expected is not None and status != expected) or b"Traceback" in output:
                unexpected.append(f"{args}: {status} {output.decode()[-500:]}")
    written = [path.read_bytes() for path in tmp_path.glob("*") if path.is_file()]
    leaked = leaks(*outputs, *written)
    record(SUITE, trials=len(runs), crashes=len(unexpected), leaks=leaked)
    assert not unexpected, unexpected
    assert leaked == 0


def test_canary_absent_from_logging_and_exception_text(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with canary_hub(scale=0.01) as hub:
        fast_collect(hub, f"sqlite:///{tmp_path / 'ok.db'}")
        hub.admin("POST", "token", {"token": "ghp_rotated"})
        client = GitHubClient(hub.base_url, CANARY)
        with pytest.raises(CollectError) as failure:
            client.get("/repos/verl-project/verl/actions/workflows")
    exception_text = "".join(traceback.format_exception(failure.value))
    leaked = leaks(caplog.text, exception_text, repr(failure.value))
    record(SUITE, trials=1, leaks=leaked)
    assert leaked == 0


def test_dashboard_engine_is_read_only(engine, db_url):
    reader = make_engine(db_url, read_only=True)
    with pytest.raises(Exception, match="(?i)read-?only"), reader.begin() as conn:
        conn.execute(text("DELETE FROM workflows"))
    reader.dispose()
    source = (Path(dashboard.__file__).parent / "loaders" / "shared.py").read_text()
    assert "make_engine(db_url, read_only=True)" in source


def _html_calls(tree: ast.AST) -> list[ast.Call]:
    """Calls that render their argument as HTML: ``unsafe_allow_html=True`` or ``st.html``."""
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        unsafe = any(
            k.arg == "unsafe_allow_html"
            and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for k in node.keywords
        )
        is_html = isinstance(node.func, ast.Attribute) and node.func.attr == "html"
        if unsafe or is_html:
            calls.append(node)
    return calls


def test_dashboard_renders_foreign_text_as_text():
    """HTML may only come from constants of our own, never from a log line, name or message."""
    offenders = []
    for path in Path(dashboard.__file__).parent.rglob("*.py"):
        for call in _html_calls(ast.parse(path.read_text())):
            if not all(isinstance(arg, ast.Constant) for arg in call.args):
                offenders.append(f"{path.name}:{call.lineno}")
    record(SUITE, trials=1, leaks=len(offenders))
    assert not offenders, f"HTML built from data: {offenders}"


HOSTILE = [
    '=HYPERLINK("http://evil")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "\t=1+1",
    "\r=1+1",
    "<script>alert(1)</script>",
    "@verl-maintainers please look",
    "fixes #6568 [click](javascript:alert(1)) ![x](http://t/p.png) | cell | `code`",
]


def test_csv_cells_never_run_as_formulas():
    frame = for_spreadsheets(pd.DataFrame({"line": HOSTILE}))
    risky = [cell for cell in frame["line"] if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    record(SUITE, trials=len(HOSTILE), leaks=len(risky))
    assert not risky


def test_comment_text_cannot_ping_link_or_inject_html():
    """Inline text is escaped; a code block shows anything literally if its fence holds."""
    bad = []
    for raw in HOSTILE:
        inline = md_text(raw)
        if any(mark in inline for mark in ("<script", "@verl", "#6568", "](")):
            bad.append(inline)
        fence, line, closing = code_block(raw).split("\n")
        if fence != closing + "text" or closing in line or "@verl" in line:
            bad.append(code_block(raw))
    record(SUITE, trials=len(HOSTILE) * 2, leaks=len(bad))
    assert not bad, bad
