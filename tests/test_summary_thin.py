"""``ciflake summary`` on thin data (#46): every section of the comment on an empty database, on
one holding a single run and on the nightly's budget-stopped first night, with its own words;
a summary without a change event (README's second repository); ``--since`` naming its forms;
and the nightly example's own sequence, three nights on fakehub, one comment from the first."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from ciflake.cli import cli
from collector.client import GitHubClient
from fakehub.child import spawned
from reports.summary_render import MARKER, render_summary
from reports.summary_target import parse_since
from store.settings import ConfigError
from tests.conftest import THIN_DATA
from tests.support.collected import FIRST_NIGHT
from tests.support.summaries import summary_data

PR = 7357
ACTION = Path(__file__).resolve().parents[1] / "action.yml"
SINCE = datetime(2026, 11, 1, tzinfo=UTC)  # the one run (2026-11-06) failed after it
HISTORY = r"([\d,]+) of ([\d,]+) days of history listed \((\d+)%\) over the 11 tracked workflows"

# The triage section of a database with no link, no recurring signature and no issue filed.
NOTHING_TRACKED = (
    "with their failures on the default branch since 2026-11-01 00:00 UTC: none "
    "(`ciflake triage link SIGNATURE URL` links one)",
    "(at least 3 failures in at least 2 runs within 7 days on main, `[triage]`): none",
    "by `ciflake triage --post` since 2026-11-01 00:00 UTC: none",
)

# kind -> section (its heading, or "headline" / "backfill" / "freshness") -> the words it says
# (or all of several); None: the section is left out.
EXPECTED: dict[str, dict[str, str | tuple[str, ...] | None]] = {
    "empty": {
        "headline": f"No runs yet around #{PR}; backfill in progress.",
        "backfill": "no collect has listed the runs of the 11 tracked workflows yet",
        "### First runs": None,
        "### Incidents": None,  # none since the last summary: the section is left out
        "### Failures": "No default-branch run since then collected yet; backfill in progress.",
        "### Triage": (
            "after 2026-11-01 00:00 UTC, the start of this summary: no summary was posted "
            "before; not NEW, which is 21 days): none, of the history collected so far "
            "(backfill in progress)",
            *NOTHING_TRACKED,
        ),
        "### Coverage lost": "Nothing to compare: no predecessor run in the 14 days before the "
        "change yet; backfill in progress.",
        "### Workflows that stopped running": None,
        "freshness": "no successful collect recorded",
    },
    "one run": {
        "headline": "**Successors since the change: not enough data (n=1)** vs predecessors in "
        "the 14 days before: no runs.",
        "backfill": None,
        "### First runs": None,
        "### Incidents": None,  # none since the last summary: the section is left out
        "### Failures": "#### ❔ ONE-OFF or UNCLASSIFIED: 1",
        "### Triage": (
            "the start of this summary: no summary was posted before; not NEW, which is 21 "
            "days): 1\n- `8a011d5ab299` `oom` · 1 failure since 2026-11-06 16:22 UTC\n\n  ```",
            *NOTHING_TRACKED,
        ),
        "### Coverage lost": "Nothing to compare: no predecessor run in the 14 days before the "
        "change.",
        "### Workflows that stopped running": None,
        "freshness": "last successful collect",
    },
    "first night": {
        "headline": f"No runs yet around #{PR}; backfill in progress.",
        "backfill": "1 begun, 0 done. The days around the change events: 35 of 2,1",
        "### First runs": None,
        "### Incidents": None,  # none since the last summary: the section is left out
        "### Failures": "No default-branch run since then collected yet; backfill in progress.",
        "### Triage": (
            "after 2026-11-01 00:00 UTC, the start of this summary: no summary was posted "
            "before; not NEW, which is 21 days): none, of the history collected so far "
            "(backfill in progress)",
            *NOTHING_TRACKED,
        ),
        "### Coverage lost": "Nothing to compare: no predecessor run in the 14 days before the "
        "change yet; backfill in progress.",
        "### Workflows that stopped running": None,
        "freshness": "stopped before its end: request budget spent (700 of --max-requests)",
    },
}


def sections(markdown: str) -> dict[str, str]:
    """The comment cut into its sections: the headline, the backfill line, each ``### ``
    section by its heading's start, the freshness line."""
    assert markdown.startswith(MARKER + "\n")
    parts = markdown.removeprefix(MARKER + "\n").strip().split("\n\n### ")
    found = {"headline": parts[0]}
    for part in parts[1:]:
        found[next(key for key in EXPECTED["empty"] if part.startswith(key[4:]))] = "### " + part
    last = next(reversed(found))
    found[last], _, found["freshness"] = found[last].rpartition("\n\n<sub>")
    if "\n\n⏳ **Backfill in progress**: " in found["headline"]:
        found["headline"], _, found["backfill"] = found["headline"].partition("\n\n⏳ ")
    return found


@pytest.mark.parametrize("kind", THIN_DATA)
def test_every_section_says_what_thin_data_holds(thin_db, kind):
    now = datetime.now(UTC)
    markdown = render_summary(summary_data(thin_db(kind), SINCE, now))
    found = sections(markdown)
    for section, words in EXPECTED[kind].items():
        if words is None:
            assert section not in found, f"{kind}: {section} should be left out"
        for said in (words,) if isinstance(words, str) else words or ():
            assert said in found.get(section, ""), f"{kind}: {section} lacks {said!r}"
    if kind == "first night":
        listed, history, share = re.search(HISTORY, found["backfill"]).groups()
        assert int(listed) == 35 and 0 < int(share) < 5
        assert (
            "Not listed yet, so left out above: e2e\\_fully\\_async\\_policy 2026-02-13"
            in found["backfill"]
        )


@pytest.mark.parametrize("kind", THIN_DATA)
def test_without_a_change_event_the_summary_says_what_happened_since(thin_db, kind):
    """PR 412 made no change event: the runs since --since over every tracked workflow."""
    from reports.summary import load_summary
    from store.engine import make_engine
    from store.events import all_events
    from store.settings import load_config

    url = thin_db(kind)
    project = load_config(env={}, db_url=url).project()
    engine = make_engine(url, read_only=True)
    try:
        events = all_events(project, engine)
        data = load_summary(engine, project, events, pr=412, since=SINCE, now=datetime.now(UTC))
    finally:
        engine.dispose()
    found = sections(render_summary(data))
    assert found["headline"].startswith(
        "## ciflake: CI of verl-project/verl since 2026-11-01 00:00 UTC\n\n"
        "No change event to compare with: what happened since then."
    )
    assert "### Coverage lost" not in found and "### First runs" not in found
    said = {
        "empty": "No runs yet since 2026-11-01 00:00 UTC; backfill in progress.",
        "one run": "**All workflows: not enough data (n=1)**",
        "first night": "No runs yet since 2026-11-01 00:00 UTC; backfill in progress.",
    }
    assert said[kind] in found["headline"]
    assert ("backfill" in found) == (kind != "one run")


def _readme_config(tmp_path: Path) -> Path:
    """README's two-repository example, as a config file."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.DOTALL)
    example = next(block for block in blocks if "[[repositories]]" in block)
    path = tmp_path / "two.toml"
    path.write_text(example)
    return path


@pytest.mark.sqlite_only
def test_readmes_second_repository_gets_its_summary(thin_db, runner, tmp_path):
    env = {"CIFLAKE_CONFIG": str(_readme_config(tmp_path))}
    base = ["--db", thin_db("empty"), "summary", "--repo", "verl-project/verl-recipe"]
    for extra in ([], ["--pr", "412"]):
        result = runner.invoke(cli, [*base, *extra], env=env)
        assert result.exit_code == 0, result.output
        assert "## ciflake: CI of verl-project/verl-recipe since " in result.output
        assert "no collect has listed the runs of the 1 tracked workflow yet" in result.output


def test_since_names_every_form_it_accepts(runner):
    with pytest.raises(ConfigError) as refused:
        parse_since("yesterday", datetime(2026, 12, 1, tzinfo=UTC))
    said = str(refused.value)
    assert said.startswith("--since: 'yesterday' is none of its forms: ")
    assert all(form in said for form in ("24h", "7d", "YYYY-MM-DD", "YYYY-MM-DDTHH:MM:SSZ"))
    result = runner.invoke(cli, ["summary", "--since", "yesterday"])
    assert result.exit_code == 2 and "24h (hours before now), 7d (days before now)" in result.output
    assert "Traceback" not in result.output


def _comments(hub, number: int) -> list[dict]:
    client = GitHubClient(hub.base_url, hub.token)
    path = f"/repos/verl-project/verl/issues/{number}/comments"
    return [c for _, page in client.pages(path, {"per_page": 100}, {}) for c in page.body]


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_the_nightly_example_posts_from_its_first_night(runner, tmp_path):
    """The example workflow's two steps, three nights on a fresh database (verl's volume, 1,000
    requests an hour, a new hour each night): each exits 0 and edits the one comment, which
    says how far the backfill has come. The budget and reserve are the action's defaults."""
    inputs = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["inputs"]
    nightly = ["collect", "--once", "-q", "--max-requests", inputs["max-requests"]["default"]]
    nightly += ["--reserve", inputs["reserve"]["default"]]
    db = f"sqlite:///{tmp_path / 'ciflake.db'}"
    listed = []
    with spawned(**FIRST_NIGHT.hub_options()) as hub:
        env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
        for night in range(3):
            hub.admin("POST", "rate_limit", {"used": 0})  # a new hour
            collected = runner.invoke(cli, ["--db", db, *nightly], env=env)
            assert collected.exit_code == 0, collected.output
            assert "request budget spent" in collected.output
            posted = runner.invoke(cli, ["--db", db, "summary", "--post"], env=env)
            assert posted.exit_code == 0, posted.output
            action = "created" if night == 0 else "edited"
            assert posted.output.startswith(f"{action} the summary comment on #{PR}: ")
            ours = [c for c in _comments(hub, PR) if c["body"].startswith(MARKER)]
            assert len(ours) == 1
            backfill = sections(ours[0]["body"])["backfill"]
            listed.append(int(re.search(HISTORY, backfill)[1].replace(",", "")))
            assert f"No runs yet around #{PR}" in ours[0]["body"] or night > 0
    assert listed[0] < listed[1] < listed[2]
