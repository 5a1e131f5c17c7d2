"""``ciflake triage`` without --post on a collected database: it prints tonight's plan and
touches nothing; the issue body; the lease that lets one --post run per repository."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ciflake.cli import cli
from reports.triage_body import BODY_LIMIT, TITLE_LIMIT, Signature, draft, marker
from reports.triage_frames import triage_frames
from store.engine import make_engine
from store.issues import holder_id, release_lease, renew_lease, take_lease
from store.models import KnownIssue, Lease, TriageLog
from store.runfilter import utc
from store.settings import load_config
from store.triage import log_action

# The collected database's default branch holds a year of failures: over 400 days, seven
# signatures fail at least twice in two runs (one of them a time limit on several runners,
# since rules 2026.12.10 mask the runner's name), and one without a deciding line is left out.
WIDE = "[triage]\nwindow_days = 400\nmin_failures = 2\nmax_new = 3\n"


def test_triage_prints_the_plan_and_touches_nothing(collected_db, runner, tmp_path):
    url = collected_db().url
    config = tmp_path / "ciflake.toml"
    config.write_text(WIDE)
    result = runner.invoke(cli, ["--config", str(config), "--db", url, "triage"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines] == ["file"] * 3 + ["waiting"] * 4
    assert "over tonight's cap" in lines[-1]
    assert "4 failures in 4 runs" in lines[0]  # the time limit on four runners
    assert "3 failures in 2 runs" in lines[1]
    assert all("2 failures in 2 runs" in line for line in lines[2:])
    with Session(make_engine(url)) as session:
        assert session.scalar(select(func.count()).select_from(KnownIssue)) == 0
        assert session.scalar(select(func.count()).select_from(TriageLog)) == 0
    defaults = tmp_path / "defaults.toml"
    defaults.write_text("")
    quiet = runner.invoke(cli, ["--config", str(defaults), "--db", url, "triage"])
    assert quiet.exit_code == 0 and quiet.output.startswith("nothing to do"), quiet.output


def test_triage_post_without_a_token_is_one_line(collected_db, runner):
    url = collected_db().url
    result = runner.invoke(cli, ["--db", url, "triage", "--post"], env={"GITHUB_TOKEN": ""})
    assert result.exit_code != 0
    (line,) = result.output.strip().splitlines()
    assert "--post needs a token with `issues: write`" in line


def _item(rows: int, line: str = "CUDA out of memory. Tried to allocate 2.00 GiB") -> Signature:
    now = pd.Timestamp("2026-12-01", tz="UTC")
    frame = pd.DataFrame(
        {
            "run_id": range(rows),
            "created_at": [now - pd.Timedelta(minutes=i) for i in range(rows)],
            "workflow_name": [f"workflow {i} @someone" for i in range(rows)],
            "runner_name": [f"runner-{i}" for i in range(rows)],
            "html_url": [f"https://github.com/o/r/actions/runs/{i}" for i in range(rows)],
        }
    )
    return Signature(
        "abcdef012345", "oom", line, rows, rows, now, now, 7, "main", frame, ("ctx #12", "```")
    )


def test_the_issue_body_carries_the_marker_the_counts_section_and_cuts_its_tables():
    issue = draft(_item(50))
    assert issue.body.startswith(marker("abcdef012345") + "\n")
    assert issue.title == "[ciflake] oom: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert issue.section in issue.body
    assert issue.section.startswith("<!-- ciflake:counts -->")
    assert issue.section.endswith("<!-- /ciflake:counts -->")
    assert issue.body.count("30 more not shown (cut to fit)") == 2  # workflows and runners
    assert "@someone" not in issue.body and "#12" not in issue.body  # no ping, no reference
    assert len(issue.body) <= BODY_LIMIT
    assert len(draft(_item(1, "x" * 1000)).title) == TITLE_LIMIT


def test_a_lease_is_held_by_one_process_and_taken_over_from_a_dead_one(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'lease.db'}")
    Lease.metadata.create_all(engine, tables=[Lease.__table__])
    hour = timedelta(hours=1)
    me = holder_id()
    assert take_lease(engine, "triage:o/r", me, hour) is None
    other = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = f"{me.rpartition(':')[0]}:{other.stdout.strip()}"  # a pid that has exited
    assert take_lease(engine, "triage:o/r", "elsewhere:1", hour) == me  # held: refused
    release_lease(engine, "triage:o/r", me)
    assert take_lease(engine, "triage:o/r", dead, hour) is None
    assert take_lease(engine, "triage:o/r", me, hour) is None  # its holder died: taken over
    assert take_lease(engine, "triage:o/r", "elsewhere:1", -hour) == me
    assert os.getpid() == int(me.rpartition(":")[2])


def test_a_lease_is_renewed_by_its_holder_only(engine):
    name, hour = "triage:o/r", timedelta(hours=1)
    assert take_lease(engine, name, "me:1", timedelta(minutes=1)) is None
    assert renew_lease(engine, name, "me:1", hour)
    with Session(engine) as session:
        expires = utc(session.get(Lease, name).expires_at)
    assert expires is not None and expires > datetime.now(UTC) + timedelta(minutes=59)
    assert not renew_lease(engine, name, "elsewhere:2", hour)  # not theirs: nothing renewed
    release_lease(engine, name, "me:1")
    assert not renew_lease(engine, name, "me:1", hour)  # gone: the holder must stop


def test_racers_for_a_free_or_an_expired_lease_leave_one_holder(engine):
    """Eight threads at once, on SQLite and PostgreSQL: exactly one takes the lease, the
    others are told who holds it; the same when it has expired."""
    name = "triage:o/r"

    def race(first: int) -> list[str | None]:
        results: list[str | None] = []
        barrier = threading.Barrier(8)

        def go(i: int) -> None:
            barrier.wait()
            results.append(take_lease(engine, name, f"h{i}:1", timedelta(hours=1)))

        threads = [threading.Thread(target=go, args=(first + i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    free = race(0)
    assert free.count(None) == 1 and len(free) == 8, free
    with Session(engine) as session, session.begin():
        lease = session.get(Lease, name)
        winner = lease.holder
        lease.expires_at = datetime.now(UTC) - timedelta(minutes=1)
    assert set(free) == {None, winner}
    expired = race(10)
    assert expired.count(None) == 1 and len(expired) == 8, expired
    with Session(engine) as session:
        assert session.get(Lease, name).holder != winner


def test_the_nightly_cap_counts_the_last_20_hours_so_an_earlier_cron_still_files(engine):
    """Last night's run began 25 minutes later than tonight's: its filings are 23 h 35 min
    old and no longer count; a second run on the same night counts the first one's."""
    project = load_config(env={}, db_url="sqlite://").project()
    now = datetime(2026, 11, 28, 1, 35, tzinfo=UTC)
    with Session(engine) as session, session.begin():
        for at in (now - timedelta(hours=23, minutes=35), now - timedelta(hours=19)):
            log_action(session, project.repo, "abcdef012345", "filed", "bot", at=at)
    assert triage_frames(engine, project, now).filed == 1
