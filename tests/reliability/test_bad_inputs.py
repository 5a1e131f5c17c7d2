"""Bad-input suite, command line: hostile config files, bad dates, unusable database paths.

Each input gets one clear error line (exit status 2, no traceback) or a graceful result, and the
database collected before it is unchanged afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import fakehub
from ciflake.cli import cli
from tests.reliability.harness import (
    CANARY,
    canary_hub,
    fast_collect,
    frozen,
    leaks,
    one_line_failure,
    record,
)
from tests.support.hubtools import migrated

SUITE = "bad_inputs"
DEEP = 20_000

CONFIGS: dict[str, bytes | str] = {
    "empty": "",
    "not TOML": "this is not toml at all",
    "unknown table": '[githib]\nrepo = "a/b"\n',
    "unknown key": "[collect]\nintervall_minutes = 5\n",
    "wrong type": '[collect]\nlog_workers = "four"\n',
    "table as a number": "github = 5\n",
    "table where an array is expected": 'workflows = {path = "x.yml"}\n',
    "missing required key": '[[workflows]]\npath = "x.yml"\n',
    "negative count": "[collect]\nlog_workers = -1\n",
    "zero interval": "[collect]\ninterval_minutes = 0\n",
    "huge integers": "[collect]\n"
    + "".join(
        f"{key} = 9223372036854775807\n"
        for key in ("interval_minutes", "log_workers", "trailing_days", "window_days")
    ),
    "huge lookback": "[collect]\nsince_days_before_first_event = 9223372036854775807\n",
    "negative lookback": "[collect]\nsince_days_before_first_event = -9223372036854775807\n",
    "huge port": "[dashboard]\nport = 99999999\n",
    "infinite and NaN floats": "[analytics]\nstale_factor = nan\nmin_runs = -5\n",
    "bad regex": '[analytics]\njob_name_strip = "(("\n',
    "bad repo": '[github]\nrepo = "../../etc/passwd"\n',
    "bad time of day": '[summary]\nnightly_at = "25:99"\n',
    "bad event date": '[[events]]\ndate = "yesterday"\ntitle = "x"\n',
    "event in year 1": "[[events]]\ndate = 0001-01-01\ntitle = 'x'\n",
    "event in year 9999": "[[events]]\ndate = 9999-12-31\ntitle = 'x'\n",
    "event of unknown kind": "[[events]]\ndate = 2026-01-01\ntitle = 'x'\nkind = 'boom'\n",
    "window that ends before it starts": "[[invalid_windows]]\nworkflow = 'a.yml'\n"
    "from = 2026-02-01\nto = 2026-01-01\n",
    "deeply nested tables": "[" + ".".join(["a"] * DEEP) + "]\n",
    "deeply nested arrays": "x = " + "[" * DEEP + "]" * DEEP + "\n",
    "deeply nested inline tables": "x = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n",
    "huge comment": "# " + "x" * 20_000_000 + "\n",
    "many workflows": "".join(
        f"[[workflows]]\npath = 'w{i}.yml'\nlineage = 'l'\n" for i in range(20_000)
    ),
    "non-UTF-8 bytes": b'[github]\nrepo = "\xff\xfe/\xc3\x28"\n',
    "NUL byte": b'[github]\nrepo = "a/b"\x00\n',
    "token file that does not exist": '[github]\ntoken_file = "/nonexistent/token"\n',
}

DATES = [
    "yesterday",
    "2026-13-45",
    "99999-01-01",
    "0001-01-01",
    "9999-12-31T23:59:59Z",
    "2026-01-01T00:00:00+25:00",
    "",
    "2026-01-01\x00",
    "9" * 400,
    "\x1b[31m2026-01-01",
]


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Iterator[tuple[fakehub.Hub, str, dict]]:
    """A hub and a database already holding its history, with a comparable dump of it."""
    with canary_hub(seed=5, scale=0.01) as hub:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'ciflake.db'}"
        fast_collect(hub, url)
        yield hub, url, frozen(migrated(url))


def _check(runner, args: list[str], url: str, before: dict) -> None:
    """Run the command; record and assert a clear outcome and an untouched database."""
    result = runner.invoke(cli, args)
    problem = None if result.exit_code == 0 else one_line_failure(result)
    lost = frozen(migrated(url)) != before
    leaked = leaks(result.output)
    record(
        SUITE, bad_inputs=1, crashes=int(problem is not None), mismatches=int(lost), leaks=leaked
    )
    assert problem is None, problem
    assert not lost, "the stored data changed"
    assert not leaked


@pytest.mark.parametrize("name", CONFIGS)
def test_hostile_config_file(name, collected, tmp_path, runner, fast_cli, monkeypatch):
    """Up to about 20 s ("many workflows": a collect asks GitHub for each of them)."""
    hub, url, before = collected
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    content = CONFIGS[name]
    path = tmp_path / "ciflake.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    collect = ["collect", "--once", "-q", "--api-url", hub.base_url]
    _check(runner, ["--config", str(path), "--db", url, *collect], url, before)
    _check(runner, ["--config", str(path), "--db", url, "config", "show"], url, before)


@pytest.mark.parametrize("where", ["a directory", "a missing file"])
def test_config_path_that_is_not_a_file(where, collected, tmp_path, runner):
    _hub, url, before = collected
    path = tmp_path if where == "a directory" else tmp_path / "missing.toml"
    _check(runner, ["--config", str(path), "--db", url, "config", "show"], url, before)


@pytest.mark.parametrize("date", DATES)
def test_bad_dates(date, collected, tmp_path, runner, fast_cli, monkeypatch):
    hub, url, before = collected
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    out = str(tmp_path / "out.csv")
    for args in (
        ["collect", "--once", "-q", "--since", date, "--api-url", hub.base_url],
        ["export", "runs", "--out", out, "--since", date],
        ["export", "runs", "--out", out, "--until", date],
    ):
        _check(runner, ["--db", url, *args], url, before)
    result = runner.invoke(cli, ["--db", url, "events", "add", date, "a title"])
    record(SUITE, bad_inputs=1, crashes=int(result.exit_code not in (0, 2)))
    assert result.exit_code in (0, 2) and "Traceback" not in result.output, result.output


def _database_urls(tmp_path: Path) -> dict[str, str]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\xffnot a database" * 1000)
    return {
        "under a regular file": f"sqlite:///{a_file}/ciflake.db",
        "a directory": f"sqlite:///{tmp_path}",
        "a missing directory": f"sqlite:///{tmp_path}/missing/ciflake.db",
        "a read-only file system": "sqlite:////proc/ciflake.db",
        "a file that is not a database": f"sqlite:///{garbage}",
        "an unreachable PostgreSQL": f"postgresql+psycopg://ciflake:{CANARY}@127.0.0.1:9/ciflake",
        "an unsupported backend": "mysql://root@localhost/ciflake",
        "not a URL": "::::",
    }


COMMANDS = [
    ["db", "upgrade"],
    ["db", "stats"],
    ["events", "list"],
    ["events", "add", "2026-01-01", "x"],
    ["collect", "--once", "-q", "--api-url", "http://127.0.0.1:9"],
    ["export", "runs", "--out", "out.csv"],
    ["reclassify"],
]


@pytest.mark.parametrize("where", list(_database_urls(Path("/tmp"))))
def test_unusable_database(where, tmp_path, runner, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    url = _database_urls(tmp_path)[where]
    for command in COMMANDS:
        result = runner.invoke(cli, ["--db", url, *command])
        problem = None if result.exit_code == 0 else one_line_failure(result)
        leaked = leaks(result.output)
        record(SUITE, bad_inputs=1, crashes=int(problem is not None), leaks=leaked)
        assert problem is None, f"{command}: {problem}"
        assert not leaked, result.output
