"""The summary comment is ours by marker and author: someone else's comment carrying the marker
is left alone, a POST answered 502 after GitHub created the comment is not repeated blindly, and
a body over GitHub's 65,536 characters is cut to fit and still renders."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import requests

import fakehub
from ciflake.cli import cli
from collector.client import GitHubClient
from collector.summary_post import ACTIONS_BOT, token_login, upsert_comment
from fakehub.payloads import BOT_LOGIN
from reports.markdown import code_block, md_text
from reports.summary_render import BODY_LIMIT, MARKER, github_length, render_summary
from tests.support.collected import collected_copy
from tests.support.hubtools import TEST_SCALE
from tests.support.markdown_fences import split_fences
from tests.support.summaries import summary_data

REPO = "verl-project/verl"
PR = 7357
SINCE = datetime(2026, 9, 20, tzinfo=UTC)
NOW = datetime(2026, 11, 28, tzinfo=UTC)
OTHER, OTHER_TOKEN = "mallory", "mallory-token"
WORKFLOW_TOKEN = "ghs-workflow-token"
SUBSET = json.loads((Path(fakehub.__file__).parent / "openapi" / "github_subset.json").read_text())


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return collected_copy(tmp_path_factory.mktemp("owner"))


def _comments(hub, token: str | None = None) -> list[dict]:
    client = GitHubClient(hub.base_url, token or hub.token)
    path = f"/repos/{REPO}/issues/{PR}/comments"
    return [c for _, page in client.pages(path, {"per_page": 100}, {}) for c in page.body]


def _write(hub, token: str, body: str) -> requests.Response:
    return requests.post(
        f"{hub.base_url}/repos/{REPO}/issues/{PR}/comments",
        json={"body": body},
        headers={"Authorization": f"token {token}"},
        timeout=10,
    )


def _post(runner, hub, db_url: str) -> list[str]:
    env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
    args = ["--db", db_url, "summary", "--post", "--since", SINCE.date().isoformat()]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_a_foreign_comment_with_the_marker_is_untouched_and_ours_is_created_beside_it(db, runner):
    with fakehub.running(seed=11, scale=TEST_SCALE, users={OTHER_TOKEN: OTHER}) as hub:
        planted = _write(hub, OTHER_TOKEN, MARKER + "\nnot ciflake's").json()
        first = _post(runner, hub, db)
        second = _post(runner, hub, db)
        counters = hub.admin("GET", "counters")["by_route"]
        comments = _comments(hub)
    assert first[0].startswith(f"created the summary comment on #{PR}: ")
    assert second[0].startswith(f"edited the summary comment on #{PR}: ")
    for output in (first, second):
        assert len(output) == 2 and output[1].startswith("left alone: 1 comment(s)")
        assert f"{OTHER} {planted['html_url']}" in output[1]
    theirs, ours = comments  # nothing else was written
    assert theirs == {**planted, "body": MARKER + "\nnot ciflake's"}  # not edited, same time
    assert ours["user"]["login"] == BOT_LOGIN and ours["body"].startswith(MARKER + "\n")
    assert counters["create_comment"] == 2 and counters["edit_comment"] == 1  # 2: theirs too
    assert counters["user"] == 2


def test_a_workflow_token_owns_the_comments_of_github_actions_bot():
    users = {WORKFLOW_TOKEN: ACTIONS_BOT}
    with fakehub.running(seed=11, scale=TEST_SCALE, users=users) as hub:
        denied = requests.get(
            f"{hub.base_url}/user", headers={"Authorization": f"token {WORKFLOW_TOKEN}"}
        )
        user = GitHubClient(hub.base_url, hub.token)
        workflow = GitHubClient(hub.base_url, WORKFLOW_TOKEN)
        logins = token_login(user), token_login(workflow)
        upsert_comment(user, REPO, PR, MARKER + "\nby the user token")
        created = upsert_comment(workflow, REPO, PR, MARKER + "\nnight 1")
        edited = upsert_comment(workflow, REPO, PR, MARKER + "\nnight 2")
        comments = _comments(hub)
    assert denied.status_code == 403
    assert denied.json()["message"] == "Resource not accessible by integration"
    assert logins == (BOT_LOGIN, ACTIONS_BOT)
    assert created[0] == "created" and edited[0] == "edited"
    assert created[1]["id"] == edited[1]["id"] and edited[1]["body"] == MARKER + "\nnight 2"
    assert [c["user"]["login"] for c in created[2]] == [BOT_LOGIN]
    assert [(c["user"]["login"], c["user"]["type"]) for c in comments] == [
        (BOT_LOGIN, "User"),
        (ACTIONS_BOT, "Bot"),
    ]
    assert comments[0]["body"] == MARKER + "\nby the user token"


def test_a_502_after_a_successful_post_leaves_one_comment(db, runner):
    with fakehub.running(seed=11, scale=TEST_SCALE) as hub:
        hub.admin("POST", "faults", {"spec": "502_post=x1"})
        output = _post(runner, hub, db)
        fired = hub.admin("GET", "faults")["fired"]
        counters = hub.admin("GET", "counters")["by_route"]
        comments = _comments(hub)
    assert fired == {"502_post": 1}, "the POST was not answered 502"
    assert output[0].startswith(f"created the summary comment on #{PR}: ")
    assert len(comments) == 1 and comments[0]["body"].startswith(MARKER)
    assert output[0].endswith(comments[0]["html_url"])
    assert counters["create_comment"] == 1 and counters["issue_comments"] == 2  # looked again


def _huge(db_url: str):
    """The real summary with every failure group full of long lines and 400 jobs lost."""
    data = summary_data(db_url, SINCE, NOW)
    assert not data.failures.empty
    long = "E " + "x" * 150 + " GH-123 #45 @someone " + "y" * 150
    failures = pd.concat(
        [
            data.failures.assign(group=group, line=long, evidence="e" * 200)
            for group in ("NEW", "PERSISTENT", "FLAKY", "INFRA/ENV", "OTHER")
        ]
        * 15,
        ignore_index=True,
    )
    lost = pd.DataFrame(
        {
            "lineage": [f"lineage-{n % 7}" for n in range(400)],
            "logical_job": [f"job {n} " + "j" * 180 for n in range(400)],
            "before_runs": 12,
            "last_workflow_path": ".github/workflows/e2e_ppo_trainer.yml",
            "last_run_at": pd.Timestamp("2026-10-01", tz="UTC"),
        }
    )
    return dataclasses.replace(data, failures=failures, coverage_lost=lost)


def test_a_100000_character_summary_is_cut_under_the_limit_and_still_renders(db):
    data = _huge(db)
    whole = render_summary(data, limit=None)
    body = render_summary(data)
    assert github_length(whole) >= 100_000
    assert github_length(body) <= BODY_LIMIT < github_length(whole)
    assert body.startswith(MARKER + "\n")
    cut = [line for line in body.splitlines() if line.startswith("✂️ **Cut to fit GitHub's")]
    assert len(cut) == 1 and f"(the whole summary has {github_length(whole):,})" in cut[0]
    assert re.search(r"\d+ of 400 jobs of the coverage lost shown", cut[0])
    outside, _, closed = split_fences(body)
    text = "\n".join(outside)
    assert closed, "a code fence is left open"
    assert text.count("<details>") == text.count("</details>") >= 2
    assert "### Coverage lost by the change: 400 jobs" in body  # the counts stay whole
    assert re.search(r"^- … and \d+ more$", body, re.MULTILINE)
    assert "GH-123" not in body and "@someone" not in body
    assert body.rstrip().endswith("</sub>")  # the footer is still there
    schema = {"$defs": SUBSET["$defs"], "$ref": "#/$defs/validation-error"}
    with fakehub.running(seed=11, scale=TEST_SCALE) as hub:
        refused = _write(hub, hub.token, whole)
        accepted = _write(hub, hub.token, body)
    assert refused.status_code == 422 and accepted.status_code == 201
    jsonschema.validate(refused.json(), schema)
    assert refused.json()["message"] == "Validation Failed"
    assert refused.json()["errors"][0]["message"] == (
        "body is too long (maximum is 65536 characters)"
    )


def test_a_summary_under_the_limit_is_not_cut(db):
    data = summary_data(db, SINCE, NOW)
    assert render_summary(data) == render_summary(data, limit=None)
    assert "Cut to fit" not in render_summary(data)


def test_gh_references_are_neutralised_like_hash_references():
    for text in (md_text("fixes GH-123 and gh-7"), code_block("see GH-123")):
        assert "GH-123" not in text and "gh-7" not in text
        assert re.search(r"GH\u200d-123", text)
    assert md_text("GHz-1 GH-x") == "GHz-1 GH-x"  # only an issue reference changes
