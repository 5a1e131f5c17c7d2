"""``ciflake triage --post`` on fakehub, through the real CLI and PyGithub's HTTP stack, on a copy
of the shared collected database and a fakehub serving the same history: the first night files
what the threshold asks up to the cap, the second files none and edits only the body whose
counts changed; a quiet signature's issue is closed with one comment and reopened with one when
it fails again, unless a person closed it as not planned; an issue by anyone else is never
edited, even with the marker; a token without ``issues: write`` and a held lease each stop with
one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import requests
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ciflake import triage_night
from ciflake.cli import cli
from collector.client import GitHubClient
from collector.triage_post import CLOSE_WORDS, LABEL_COLOR
from fakehub.history import DEFAULT_END
from fakehub.payloads import BOT_LOGIN
from fakehub.web import Request, Response, json_response
from reports.triage_body import marker
from store.engine import make_engine
from store.issues import holder_id, take_lease
from store.models import KnownIssue, Lease, TriageLog
from store.runfilter import utc
from store.vocabulary import COUNTS_END, COUNTS_START
from tests.support.collected import DEFAULT
from tests.support.triage import (
    FAILURES,
    FILED,
    REPO,
    WAITING,
    fail_again,
    hub_comments,
    hub_issues,
    triage_config,
    wrap_route,
)

NOW = DEFAULT_END  # the history's end: the night the tests triage (fakehub's clock starts there)
PERSON, PERSON_TOKEN = "maintainer1", "maintainer1-token"


class Clock(datetime):
    """``datetime`` whose now() is the test's night (ciflake.triage_night reads the clock)."""

    at = NOW

    @classmethod
    def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
        return cls.at


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr(triage_night, "datetime", Clock)
    monkeypatch.setattr(Clock, "at", NOW)
    return Clock


@pytest.fixture
def hub():
    with DEFAULT.hub() as running:
        running.admin("POST", "users", {"token": PERSON_TOKEN, "login": PERSON})
        yield running


def _post(runner, hub, db_url: str, config, code: int = 0) -> list[str]:
    env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
    args = ["--config", str(config), "--db", db_url, "triage", "--post"]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == code, result.output
    return result.output.splitlines()


def _forget(db_url: str) -> None:
    """Every link and triage log row gone, as after a lost database."""
    engine = make_engine(db_url)
    try:
        with Session(engine) as session, session.begin():
            session.execute(delete(KnownIssue))
            session.execute(delete(TriageLog))
    finally:
        engine.dispose()


def _as_person(hub, method: str, path: str, body: dict) -> dict:
    response = requests.request(
        method,
        f"{hub.base_url}/repos/{REPO}{path}",
        json=body,
        headers={"Authorization": f"token {PERSON_TOKEN}"},
        timeout=10,
    )
    assert response.ok, response.text
    return response.json()


def _routes(hub) -> dict[str, int]:
    return hub.admin("GET", "counters")["by_route"]


def _links(db_url: str) -> dict[str, KnownIssue]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            return {row.signature: row for row in session.scalars(select(KnownIssue))}
    finally:
        engine.dispose()


def _log(db_url: str) -> list[tuple[str, str]]:
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            rows = session.execute(select(TriageLog.action, TriageLog.signature)).all()
            return sorted((a, s) for a, s in rows)
    finally:
        engine.dispose()


def _section(body: str) -> str:
    return body[body.index(COUNTS_START) : body.index(COUNTS_END)]


def _stale(db_url: str, signature: str, number: int | None = None) -> None:
    """Make the link's counts look stale (an update is planned), pointing at ``number``."""
    engine = make_engine(db_url)
    try:
        with Session(engine) as session, session.begin():
            link = session.get(KnownIssue, (REPO, signature))
            link.issue_number = number or link.issue_number
            link.body_sha256 = "stale"
    finally:
        engine.dispose()


def test_two_nights_file_up_to_the_cap_then_edit_only_the_changed_counts(
    collected_db, runner, hub, clock, tmp_path, monkeypatch
):
    url = collected_db().url
    naps: list[float] = []

    class Pacing(GitHubClient):
        """The client as shipped, its sleeps recorded instead of slept."""

        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs, sleep=naps.append)

    monkeypatch.setattr(triage_night, "GitHubClient", Pacing)
    config = triage_config(tmp_path, quiet_days=400, pause_seconds=3)
    first = _post(runner, hub, url, config)
    assert naps == [3.0, 3.0]  # between two creates, not before the first
    issues = hub_issues(hub)
    by_signature = {issue["body"].split(" -->")[0].split()[-1]: issue for issue in issues.values()}
    assert sorted(by_signature) == sorted(FILED)  # the cap: three, the largest first
    for signature, issue in by_signature.items():
        assert issue["login"] == BOT_LOGIN and issue["state"] == "open"
        assert issue["body"].startswith(marker(signature) + "\n")
        failed, runs = FAILURES[signature]
        assert f"**{failed}** failures in **{runs}** runs" in issue["body"]
        assert issue["labels"][0] == "ciflake" and issue["labels"][1].startswith("ciflake:")
    assert [line.split(" #")[0] for line in first[:3]] == ["filed"] * 3
    assert first[3:] == [
        f"waiting: {s} (2 failures in 2 runs; over tonight's cap)" for s in WAITING
    ]
    labels = hub.app.repos[REPO].tracker.labels
    assert labels["ciflake"]["color"] == LABEL_COLOR
    links = _links(url)
    assert set(links) == set(FILED)
    for signature, link in links.items():
        issue = by_signature[signature]
        assert (link.source, link.issue_number, link.state) == ("ciflake", issue["number"], "open")
        assert link.url.endswith(f"/issues/{issue['number']}")
    assert _log(url) == [("filed", s) for s in sorted(FILED)]
    assert _routes(hub)["create_issue"] == 3

    # a person writes under one issue's counts; a later collect adds a failure to another
    grown, kept = by_signature[FILED[0]], by_signature[FILED[1]]
    note = kept["body"] + "\nA person's note: seen on npu-7 too.\n"
    _as_person(hub, "PATCH", f"/issues/{kept['number']}", {"body": note})
    fail_again(url, FILED[0], NOW - timedelta(days=1))
    before = {n: dict(issue) for n, issue in hub_issues(hub).items()}
    second = _post(runner, hub, url, config)
    after = hub_issues(hub)
    routes = _routes(hub)
    assert second == [
        f"updated #{grown['number']} ({FILED[0]}): counts changed",
        *(f"waiting: {s} (2 failures in 2 runs; over tonight's cap)" for s in WAITING),
    ]
    assert routes["create_issue"] == 3 and routes["edit_issue"] == 2  # the person's, and ours
    failed, runs = FAILURES[FILED[0]]
    assert f"**{failed + 1}** failures in **{runs + 1}** runs" in after[grown["number"]]["body"]
    assert after[grown["number"]]["body"].startswith(marker(FILED[0]) + "\n")
    assert {n: i for n, i in after.items() if n != grown["number"]} == {
        n: i for n, i in before.items() if n != grown["number"]
    }  # the others, the person's note included, untouched
    assert _section(after[grown["number"]]["body"]) != _section(grown["body"])
    assert _links(url)[FILED[0]].body_sha256 != links[FILED[0]].body_sha256
    assert _links(url)[FILED[1]].body_sha256 == links[FILED[1]].body_sha256
    assert _log(url) == sorted([("filed", s) for s in FILED] + [("updated", FILED[0])])
    assert all(not hub_comments(hub, n) for n in after)  # never a comment per failure


def test_quiet_closes_a_new_failure_reopens_and_a_persons_not_planned_stays_closed(
    collected_db, runner, hub, clock, tmp_path
):
    url = collected_db().url
    config = triage_config(tmp_path, quiet_days=14)
    _post(runner, hub, url, config)
    numbers = {s: link.issue_number for s, link in _links(url).items()}
    again, refused, quiet = FILED
    closing = _post(runner, hub, url, config)
    closed = [line for line in closing if line.startswith("closed")]
    assert len(closed) == 3 and all("quiet: last failed 2026-" in line for line in closed)
    words = CLOSE_WORDS.format(days=14)
    for signature in FILED:
        issue = hub_issues(hub)[numbers[signature]]
        assert (issue["state"], issue["state_reason"]) == ("closed", "completed")
        assert hub_comments(hub, numbers[signature]) == [(BOT_LOGIN, words)]

    # a person reopens one and closes it as not planned; two signatures fail again; a person
    # reopens the quiet one's issue: it stays open (no nightly tug of war)
    _as_person(hub, "PATCH", f"/issues/{numbers[quiet]}", {"state": "open"})
    _as_person(hub, "PATCH", f"/issues/{numbers[refused]}", {"state": "open"})
    done = {"state": "closed", "state_reason": "not_planned"}
    _as_person(hub, "PATCH", f"/issues/{numbers[refused]}", done)
    clock.at = NOW + timedelta(days=2)
    for signature in (again, refused):
        fail_again(url, signature, NOW + timedelta(days=1))
    third = _post(runner, hub, url, config)
    issues = hub_issues(hub)
    assert f"reopened #{numbers[again]} ({again}): failed 2026-11-29" in third
    assert not [line for line in third if refused in line]
    assert [line for line in third if quiet in line] == [
        f"left open: #{numbers[quiet]} was reopened by {PERSON} ({quiet})"
    ]
    assert (issues[numbers[again]]["state"], issues[numbers[again]]["state_reason"]) == (
        "open",
        "reopened",
    )
    assert [who for who, _ in hub_comments(hub, numbers[again])] == [BOT_LOGIN] * 2
    assert "failed again" in hub_comments(hub, numbers[again])[1][1]
    left = issues[numbers[refused]]
    assert (left["state"], left["state_reason"], left["closed_by"]) == (
        "closed",
        "not_planned",
        PERSON,
    )
    assert hub_comments(hub, numbers[refused]) == [(BOT_LOGIN, words)]  # nothing added
    assert issues[numbers[quiet]]["state"] == "open"
    assert hub_comments(hub, numbers[quiet]) == [(BOT_LOGIN, words)]
    link = _links(url)[refused]
    assert (link.state, link.state_reason, link.closed_by) == ("closed", "not_planned", PERSON)
    actions = _log(url)
    assert ("reopened", again) in actions and ("reopened", refused) not in actions
    assert [a for a, s in actions if s == quiet] == ["closed", "filed"]
    # a fourth night, the person's close and the person's reopen still stand
    fourth = _post(runner, hub, url, config)
    assert not [line for line in fourth if refused in line]
    assert f"left open: #{numbers[quiet]} was reopened by {PERSON} ({quiet})" in fourth
    assert hub_issues(hub)[numbers[refused]]["state"] == "closed"
    assert hub_issues(hub)[numbers[quiet]]["state"] == "open"


def test_an_issue_by_someone_else_with_the_marker_is_never_edited(
    collected_db, runner, hub, clock, tmp_path
):
    url = collected_db().url
    config = triage_config(tmp_path, quiet_days=400)
    signature = FILED[0]
    copied = marker(signature) + "\ncopied from ciflake's issue by hand"
    theirs = _as_person(
        hub, "POST", "/issues", {"title": "t", "body": copied, "labels": ["ciflake"]}
    )
    first = _post(runner, hub, url, config)
    assert f"filed #{theirs['number'] + 1} ({signature})" in first[0]  # ours, beside theirs
    # the link now points at their issue, whose counts look stale: an update is planned
    _stale(url, signature, theirs["number"])
    second = _post(runner, hub, url, config)
    left_alone = f"left alone: #{theirs['number']} is not an issue ciflake filed ({signature})"
    assert left_alone in second
    after = hub_issues(hub)[theirs["number"]]
    assert (after["body"], after["updated_at"], after["state"]) == (
        copied,
        theirs["updated_at"],
        "open",
    )
    assert hub_comments(hub, theirs["number"]) == []
    assert _routes(hub).get("edit_issue", 0) == 0
    # quiet for 14 days: a close is planned, and refused the same way (ours are closed)
    closing = _post(runner, hub, url, triage_config(tmp_path, quiet_days=14))
    assert left_alone in closing and len([x for x in closing if x.startswith("closed")]) == 2
    assert hub_issues(hub)[theirs["number"]]["state"] == "open"
    # they close it; the signature fails again: a reopen is planned, and refused
    _as_person(hub, "PATCH", f"/issues/{theirs['number']}", {"state": "closed"})
    clock.at = NOW + timedelta(days=2)
    fail_again(url, signature, NOW + timedelta(days=1))
    reopening = _post(runner, hub, url, triage_config(tmp_path, quiet_days=14))
    assert left_alone in reopening and not [x for x in reopening if signature in x and "reo" in x]
    after = hub_issues(hub)[theirs["number"]]
    assert (after["body"], after["state"], after["closed_by"]) == (copied, "closed", PERSON)
    assert hub_comments(hub, theirs["number"]) == []
    assert _routes(hub)["edit_issue"] == 3  # the person's close, and our two closes


def test_a_token_without_issues_write_stops_with_one_line(
    collected_db, runner, hub, clock, tmp_path
):
    url = collected_db().url
    hub.admin("POST", "permissions", {"issues": False})
    result = runner.invoke(
        cli,
        ["--config", str(triage_config(tmp_path)), "--db", url, "triage", "--post"],
        env={"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url},
    )
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("ciflake: error: triage not posted: the token needs `issues: write`")
    assert hub.token not in result.output
    assert hub_issues(hub) == {} and _links(url) == {}


def test_a_second_post_while_the_lease_is_held_stops_with_one_line(
    collected_db, runner, hub, clock, tmp_path
):
    url = collected_db().url
    engine = make_engine(url)
    try:
        assert take_lease(engine, f"triage:{REPO}", "elsewhere:4242", timedelta(hours=1)) is None
    finally:
        engine.dispose()
    result = runner.invoke(
        cli,
        ["--config", str(triage_config(tmp_path)), "--db", url, "triage", "--post"],
        env={"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url},
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"ciflake: error: triage --post for {REPO} is already running (elsewhere:4242); not started"
    )
    assert _routes(hub) == {}  # not one request to GitHub


def test_an_issue_that_lost_its_label_and_its_link_is_adopted_not_filed_again(
    collected_db, runner, hub, clock, tmp_path
):
    """Our issues are listed by author (and marker), not by label: a person relabelled one,
    or GitHub dropped the labels of a create by a token without push access."""
    url = collected_db().url
    config = triage_config(tmp_path, quiet_days=400)
    _post(runner, hub, url, config)
    numbers = {s: link.issue_number for s, link in _links(url).items()}
    _as_person(hub, "PATCH", f"/issues/{numbers[FILED[0]]}", {"labels": ["needs-triage"]})
    _forget(url)  # the links and the log lost: a cache evicted, or `ciflake triage unlink`
    again = _post(runner, hub, url, config)
    firsts = sorted(issue["body"].split("\n", 1)[0] for issue in hub_issues(hub).values())
    assert firsts == sorted(marker(s) for s in FILED)  # not one issue more
    assert sorted(again[:3]) == sorted(
        f"adopted #{numbers[s]} ({s}): http://fakehub.invalid/{REPO}/issues/{numbers[s]}"
        for s in FILED
    )
    assert {s: link.issue_number for s, link in _links(url).items()} == numbers
    assert _log(url) == [("adopted", s) for s in sorted(FILED)]  # not counted as filed
    # the cap counts filings only: a third run files those that waited
    third = _post(runner, hub, url, config)
    assert third[0].startswith(f"filed #{max(numbers.values()) + 1} ({WAITING[0]})"), third


def test_a_creator_filter_that_lists_nothing_still_finds_our_labelled_issues(
    collected_db, runner, hub, clock, tmp_path
):
    """How GitHub's ``creator`` filter matches a bot's login is undocumented: if it listed
    nothing, our labelled issues are still found and adopted, not filed again."""
    url = collected_db().url
    config = triage_config(tmp_path, quiet_days=400)
    _post(runner, hub, url, config)
    numbers = {s: link.issue_number for s, link in _links(url).items()}

    def blind(listing):  # type: ignore[no-untyped-def]
        def handler(request: Request) -> Response:
            return json_response(200, []) if request.arg("creator") else listing(request)

        return handler

    wrap_route(hub, "issues", blind)
    _forget(url)  # the links and the log lost
    again = _post(runner, hub, url, config)
    assert sorted(line.split(" (")[0] for line in again[:3]) == sorted(
        f"adopted #{n}" for n in numbers.values()
    )
    assert len(hub_issues(hub)) == len(numbers)  # not one issue more


def test_an_edit_github_answers_with_the_old_body_is_reported_and_the_night_goes_on(
    collected_db, runner, hub, clock, tmp_path
):
    """GitHub answers 200 and keeps the old body when the new one is too long."""
    url = collected_db().url
    _post(runner, hub, url, triage_config(tmp_path, quiet_days=400, max_new=2))
    tracker = hub.app.repos[REPO].tracker

    def keeping(update):  # type: ignore[no-untyped-def]
        def handler(request: Request, text: str) -> Response:
            old = tracker.issues[int(text)]["body"]
            answer = update(request, text)
            tracker.issues[int(text)]["body"] = old
            return json_response(answer.status, tracker.payload(int(text)))

        return handler

    wrap_route(hub, "edit_issue", keeping)
    link = _links(url)[FILED[0]]
    before = hub_issues(hub)[link.issue_number]["body"]
    fail_again(url, FILED[0], NOW)  # its counts change
    clock.at = NOW + timedelta(days=1)  # a night later: room for two more
    second = _post(runner, hub, url, triage_config(tmp_path, quiet_days=400, max_new=2))
    assert second[0] == f"not updated: #{link.issue_number}: GitHub kept the old body"
    assert [line.split(" #")[0] for line in second[1:3]] == ["filed", "filed"]  # goes on
    assert hub_issues(hub)[link.issue_number]["body"] == before
    assert _links(url)[FILED[0]].body_sha256 == link.body_sha256  # tried again tomorrow
    assert ("updated", FILED[0]) not in _log(url)


def test_an_update_without_issues_write_stops_with_one_line(
    collected_db, runner, hub, clock, tmp_path
):
    url = collected_db().url
    config = triage_config(tmp_path, quiet_days=400)
    _post(runner, hub, url, config)
    for signature in FILED:
        _stale(url, signature)
    hub.admin("POST", "permissions", {"issues": False})
    out = _post(runner, hub, url, config, code=2)
    assert out == [
        f"ciflake: error: triage not posted: the token needs `issues: write` on {REPO} "
        "(GitHub answered 403: Resource not accessible by integration)"
    ]


def test_a_lease_taken_over_during_the_night_stops_before_the_next_write(
    collected_db, runner, hub, clock, tmp_path
):
    """The lease is renewed before each write: a night paced slowly outlasts LEASE_TTL."""
    url = collected_db().url
    engine = make_engine(url)
    name = f"triage:{REPO}"

    made = [0]

    def taking_over(create):  # type: ignore[no-untyped-def]
        def handler(request: Request) -> Response:
            made[0] += 1
            with Session(engine) as session, session.begin():
                lease = session.get(Lease, name)
                assert lease is not None and lease.holder == holder_id()
                if made[0] == 1:  # the night so far outlasted the lease's TTL
                    lease.expires_at = datetime.now(UTC) - timedelta(minutes=1)
                else:  # renewed before this create; now another process takes it over
                    assert utc(lease.expires_at) > datetime.now(UTC) + timedelta(minutes=59)
                    lease.holder = "elsewhere:4242"
            return create(request)

        return handler

    wrap_route(hub, "create_issue", taking_over)
    try:
        out = _post(runner, hub, url, triage_config(tmp_path, quiet_days=400), code=2)
    finally:
        engine.dispose()
    assert [line.split(" #")[0] for line in out[:2]] == ["filed", "filed"]
    assert out[2:] == [
        f"ciflake: error: triage not posted: the lease {name} was taken over by another "
        "process; stopped"
    ]
    assert _routes(hub)["create_issue"] == 2
