"""``ciflake summary``: hostile log text neither pings nor breaks the comment, the failures say
how much of their categories is known, and ``--post`` keeps exactly one comment, found on any
page by its marker and edited in place."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

import pytest
import requests
from sqlalchemy import select, update
from sqlalchemy.orm import Session

import fakehub
from ciflake.cli import cli
from collector.client import GitHubClient
from collector.summary_post import find_marked_comment
from reports.markdown import code_block, md_text
from reports.summary_render import MARKER, render_summary
from reports.summary_target import parse_since
from store.engine import make_engine
from store.models import Failure, JobLog, PostedComment, WorkflowRun
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
    since = datetime(2026, 6, 1, tzinfo=UTC)  # expired logs before, archived ones after
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
