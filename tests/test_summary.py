"""``ciflake summary``: hostile log text neither pings nor breaks the comment, the failures say
how much of their categories is known, and ``--post`` keeps exactly one comment, found on any
page by its marker and edited in place."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import requests
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

import fakehub
from ciflake.cli import cli
from collector.client import GitHubClient
from collector.summary_post import find_marked_comment
from reports.markdown import code_block, md_text
from reports.summary import load_summary
from reports.summary_render import MARKER, render_summary
from reports.summary_target import parse_since
from store.engine import make_engine
from store.models import Failure, JobLog, KnownIssue, PostedComment, WorkflowRun
from store.project import TriageSettings
from store.settings import load_config
from store.triage import log_action
from tests.support.collected import collected_copy
from tests.support.hubtools import TEST_SCALE
from tests.support.markdown_fences import split_fences
from tests.support.summaries import summary_data

REPO = "verl-project/verl"
PR = 7357
SINCE = datetime(2026, 9, 20, tzinfo=UTC)  # fakehub seed 11: default-branch failures after it
NOW = datetime(2026, 11, 28, tzinfo=UTC)
HOSTILE = "@maintainer look </details> ```` ``` <img src=x onerror=alert(1)> | #123 **bold**"


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> str:
    """The collected history with every default-branch failure since SINCE saying HOSTILE."""
    url = collected_copy(tmp_path_factory.mktemp("summary"))
    engine = make_engine(url)
    with Session(engine) as session, session.begin():
        ids = select(WorkflowRun.id).where(
            WorkflowRun.created_at >= SINCE, WorkflowRun.head_branch == "main"
        )
        changed = session.execute(
            update(Failure).where(Failure.run_id.in_(ids)).values(line=HOSTILE)
        ).rowcount
    assert changed >= 3
    return url


def _render(db_url: str) -> str:
    data = summary_data(db_url, SINCE, NOW)
    return render_summary(data)


def test_hostile_log_lines_neither_ping_nor_break_the_comment(hostile_db):
    markdown = _render(hostile_db)
    assert markdown.startswith(MARKER + "\n")
    assert "@maintainer" not in markdown and "#123" not in markdown
    outside, inside, closed = split_fences(markdown)
    assert closed, "a code fence is left open"
    quoted = [line for line in inside if "maintainer" in line]
    assert len(quoted) >= 3, "the hostile lines are not shown in code blocks"
    assert all("</details>" in line for line in quoted)  # shown literally, inside a block
    text = "\n".join(outside)
    assert text.count("<details>") == text.count("</details>") >= 1
    assert "<img" not in text and "maintainer" not in text
    assert "### Failures since 2026-09-20 00:00 UTC" in markdown
    assert re.search(r"^#### (🆕|🟥|🔁|🛠️|❔) .+: \d+$", markdown, re.MULTILINE)  # a group


KNOWN_LINE = re.compile(
    r"How much of this is known: (category (from|unknown) .+; n=(\d+) failures?|no failures)\."
)
ITEM_JOB = re.compile(r"^- \*\*.*/job/(\d+)\)")


def test_failures_say_how_much_of_their_categories_is_known(tmp_path):
    url = collected_copy(tmp_path)
    since = datetime(2026, 7, 15, tzinfo=UTC)  # expired logs before, archived ones after
    data = summary_data(url, since, NOW)
    markdown = render_summary(data)
    lines = [m for m in map(KNOWN_LINE.fullmatch, markdown.splitlines()) if m]
    assert len(lines) == 1
    total = int(re.search(r"### Failures since .*: (\d+)", markdown)[1])
    assert int(lines[0][3]) == total > 0 and "more (`ciflake export" not in markdown
    items = [line for line in markdown.splitlines() if line.startswith("- **")]
    unknown = [line for line in items if " · unknown: " in line]
    assert unknown, "no unknown failure since the date: pick an earlier one"
    assert f"unknown {len(unknown) / total:.0%} (" in lines[0][0]
    with Session(make_engine(url, read_only=True)) as session:
        for line in filter(ITEM_JOB.match, unknown):
            job_id = int(ITEM_JOB.match(line)[1])
            stage, status = session.execute(
                select(Failure.stage, JobLog.status)
                .join(JobLog, JobLog.job_id == Failure.job_id, isouter=True)
                .where(Failure.job_id == job_id)
            ).one()
            why = {"expired": "log expired", "ok": "log read, no rule matched"}.get(
                status, "no log"
            )
            said = f"failed while {stage}, {why}" if stage else why
            assert f" · unknown: {said} · " in line


def test_markdown_helpers_escape_and_fence():
    text = md_text("a|b <x> @me `c` [l](u) ![i](j) #9 *e*\n\u202eevil")
    assert "|" not in text.replace("\\|", "") and "<x>" not in text and "@me" not in text
    assert "\n" not in text and "\u202e" not in text and "](" not in text
    block = code_block("run ```` here")
    fences = [line for line in block.splitlines() if line.startswith("`")]
    assert fences[0] == "`" * 5 + "text" and fences[1] == "`" * 5


def test_parse_since():
    assert parse_since("24h", NOW) == datetime(2026, 11, 27, tzinfo=UTC)
    assert parse_since("7d", NOW) == datetime(2026, 11, 21, tzinfo=UTC)
    assert parse_since("2026-11-01", NOW) == datetime(2026, 11, 1, tzinfo=UTC)


def _comments(hub, number: int) -> list[dict]:
    client = GitHubClient(hub.base_url, hub.token)
    path = f"/repos/{REPO}/issues/{number}/comments"
    return [c for _, page in client.pages(path, {"per_page": 100}, {}) for c in page.body]


def _post(runner, hub, db_url: str):
    env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
    args = ["--db", db_url, "summary", "--post", "--since", SINCE.date().isoformat()]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    assert hub.token not in result.output
    return result.output


def test_post_twice_leaves_one_comment_edited_in_place(hostile_db, runner):
    with fakehub.running(seed=11, scale=TEST_SCALE) as hub:
        others = f"{hub.base_url}/repos/{REPO}/issues/{PR}/comments"
        auth = {"Authorization": f"token {hub.token}"}
        for n in range(100):  # the summary lands on the second page
            requests.post(others, json={"body": f"human {n}"}, headers=auth, timeout=10)
        hub.admin("POST", "counters/reset")
        first = _post(runner, hub, hostile_db)
        assert first.startswith(f"created the summary comment on #{PR}: ")
        second = _post(runner, hub, hostile_db)
        assert second.startswith(f"edited the summary comment on #{PR}: ")
        counters = hub.admin("GET", "counters")["by_route"]
        comments = _comments(hub, PR)
    assert counters["create_comment"] == 1 and counters["edit_comment"] == 1
    ours = [c for c in comments if c["body"].startswith(MARKER)]
    assert len(comments) == 101 and len(ours) == 1
    assert ours[0]["updated_at"] > ours[0]["created_at"]
    with Session(make_engine(hostile_db)) as session:
        posted = session.scalars(select(PostedComment)).all()
    assert [(p.id, p.issue_number) for p in posted] == [(ours[0]["id"], PR)]
    assert posted[0].body_sha256 == hashlib.sha256(ours[0]["body"].encode()).hexdigest()


def test_edit_survives_a_secondary_rate_limit():
    with fakehub.running(seed=11, scale=TEST_SCALE) as hub:
        client = GitHubClient(hub.base_url, hub.token)
        path = f"/repos/{REPO}/issues/{PR}/comments"
        client.request("POST", path, body={"body": MARKER + "\nold"})
        mine = find_marked_comment(client, REPO, PR)
        hub.admin("POST", "faults", {"spec": "secondary=x1"})
        edit = f"/repos/{REPO}/issues/comments/{mine['id']}"
        status, _, comment = client.request("PATCH", edit, body={"body": MARKER + "\nnew"})
        fired = hub.admin("GET", "faults")["fired"]
    assert status == 200 and comment["body"] == MARKER + "\nnew"
    assert fired == {"secondary": 1} and client.stats.waits


def test_post_needs_a_token_and_a_pr_without_an_event_is_summarised(hostile_db, runner):
    no_token = runner.invoke(cli, ["--db", hostile_db, "summary", "--post"])
    assert no_token.exit_code == 2 and "needs a token" in no_token.output
    other = runner.invoke(cli, ["--db", hostile_db, "summary", "--pr", "1", "--since", "7d"])
    assert other.exit_code == 0, other.output
    assert "No change event to compare with: what happened since then." in other.output


# The triage section: a year of the collected default branch, where four signatures with a
# deciding line fail at least twice in two runs (tests/test_triage_night.py's WIDE settings).
YEAR = timedelta(days=400)
WIDE = TriageSettings(window_days=400, min_failures=2, max_new=1)
LAST_SUMMARY = NOW - timedelta(days=60)
ISSUES = f"https://github.com/{REPO}/issues"


def _recurring_signatures(session: Session) -> list[tuple[str, datetime]]:
    """(signature, last failure) of the default branch's signatures with a deciding line
    failing at least twice in two runs within YEAR of NOW, the largest first."""
    run = WorkflowRun
    stmt = (
        select(Failure.signature, func.max(run.created_at))
        .join(run, run.id == Failure.run_id)
        .where(run.head_branch == "main", run.created_at >= NOW - YEAR, Failure.line != "")
        .group_by(Failure.signature)
        .having(func.count() >= 2, func.count(func.distinct(Failure.run_id)) >= 2)
        .order_by(func.count().desc(), Failure.signature)
    )
    return [(sig, last) for sig, last in session.execute(stmt)]


def _first_seen_after(session: Session, moment: datetime) -> set[str]:
    """The signatures first seen (in the whole history, any branch) after ``moment``."""
    stmt = (
        select(Failure.signature)
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .group_by(Failure.signature)
        .having(func.min(WorkflowRun.created_at) > moment)
    )
    return set(session.scalars(stmt))


def _triage_section(markdown: str) -> str:
    return markdown.split("### Triage\n\n", 1)[1].split("\n\n### ", 1)[0].split("\n\n<sub>")[0]


def test_the_triage_section_lists_new_known_recurring_and_posted(collected_db):
    url = collected_db().url
    engine = make_engine(url)
    with Session(engine) as session, session.begin():
        recurring = _recurring_signatures(session)
        assert len(recurring) == 7, recurring
        (closed, last_failed), (filed, _) = recurring[0], recurring[1]
        new = _first_seen_after(session, LAST_SUMMARY)
        assert new, "no signature first seen after LAST_SUMMARY: pick an earlier one"
        session.add_all(
            [
                PostedComment(
                    id=1, repo=REPO, issue_number=PR, body_sha256="0" * 64, html_url=None,
                    created_at=LAST_SUMMARY - timedelta(days=9), updated_at=LAST_SUMMARY,
                ),
                KnownIssue(
                    repo=REPO, signature=closed, url=f"{ISSUES}/1234", issue_repo=REPO,
                    issue_number=1234, source="person", set_by="alice", set_at=LAST_SUMMARY,
                    state="closed", state_reason="completed", closed_by="alice",
                    closed_at=last_failed - timedelta(days=1),
                ),
                KnownIssue(
                    repo=REPO, signature=filed, url=f"{ISSUES}/12", issue_repo=REPO,
                    issue_number=12, source="ciflake", set_by="bot", set_at=LAST_SUMMARY,
                    state="open",
                ),
            ]
        )  # fmt: skip
        for action, number, at in (
            ("closed", 11, LAST_SUMMARY - timedelta(hours=1)),  # before the last summary
            ("filed", 12, LAST_SUMMARY + timedelta(hours=1)),
            ("reopened", 13, LAST_SUMMARY + timedelta(hours=2)),
            ("adopted", 14, LAST_SUMMARY + timedelta(hours=3)),  # found again, not filed
        ):
            log_action(session, REPO, filed, action, "bot", issue_number=number, at=at)
    project = load_config(env={}, db_url=url).project()
    data = load_summary(
        engine, replace(project, triage=WIDE), (), pr=None, since=NOW - YEAR, now=NOW
    )
    engine.dispose()
    section = _triage_section(render_summary(data))
    lists = dict(part.split("**", 1) for part in section.removeprefix("**").split("\n\n**"))
    # new since the last summary: its post's time, not NEW's 21 days
    said = lists["New signatures since the last summary"]
    assert said.startswith(
        " (first seen in the repository's whole history after 2026-09-29 00:00 UTC, the last "
        f"summary's post; not NEW, which is 21 days): {len(new)}\n"
    ), said
    shown = re.findall(r"^- `([0-9a-f]{12})`", said, re.MULTILINE)
    assert set(shown) <= new and len(shown) == min(len(new), 10)
    # known issues: both links with their state; the person's closed one recurred
    said = lists["Known issues"]
    assert ": 2, 1 recurred after being closed\n" in said
    assert f"- [#\u200d1234]({ISSUES}/1234) closed · `{closed}` `" in said
    assert f"**recurred after #1234 was closed** (failed {last_failed:%Y-%m-%d})" in said
    assert f"- [#\u200d12]({ISSUES}/12) open · `{filed}` `" in said
    # the recurring unlinked ones: the other five, four of them over the nightly cap of 1
    said = lists["Recurring signatures without an issue"]
    assert said.startswith(
        " (at least 2 failures in at least 2 runs within 400 days on main, `[triage]`): 5, "
        "4 of them waiting (over the nightly cap of 1 new issues)\n"
    ), said
    assert [sig for sig, _ in recurring[2:]] == re.findall(r"^- `([0-9a-f]{12})`", said, re.M)
    assert said.count(" · waiting") == 4
    # what triage --post did since the last summary
    said = lists["Issues filed, adopted, updated, closed or reopened"]
    assert said.startswith(
        " by `ciflake triage --post` since 2026-09-29 00:00 UTC: filed 1, adopted 1, "
    ), said
    assert "- adopted [#\u200d14](" in said
    assert "reopened 1\n" in said and "closed" not in said.split("\n", 1)[1]
