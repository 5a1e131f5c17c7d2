"""``ciflake demo``: fakehub + collect + triage + dashboard on one machine, with nothing to
configure: two simulated repositories (verl and its recipes repository), as ``demo.toml`` tracks
them. After the collect, a maintainer's link and a night of ``triage --post`` on fakehub, so
that the Failures page and the summary show known, new and filed issues."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine

from collector.client import CollectError
from collector.once import collect_all
from collector.sync_report import CollectOptions, CollectReport
from fakehub.child import ChildHub, spawned
from fakehub.history import today
from store.settings import Config, load_config

DEMO_DB_URL = "sqlite:///ciflake-demo.db"
DEMO_SEED = 1
DEMO_RATE_LIMIT = 1_000_000  # requests an hour: the demo's one collect never waits for a reset
# The demo's volume: verl's default branch at 1.6 times its commit rate and a tenth of its
# pull-request pushes, from a month before #6568. Every before/after window of the main
# lineages at #6568 and #7357 then holds 30 or more default-branch runs (the successors of
# #7357 run on 40-45% of the commits), June's shifts are found as changepoints, and the collect
# of about 7,500 runs stays within the demo's 90 s (bench/demo.py). Pull requests still show,
# thinly, under the PR scope.
DEMO_SCALE = 1.6
DEMO_PR_SCALE = 0.1
DEMO_SINCE = datetime(2026, 5, 1, tzinfo=UTC)
# The link a maintainer made in the demo (`ciflake triage link`): verl's most frequent `oom`
# signature to the pull request that fixed verl's OOM and missing dependencies.
DEMO_LINK_REPO = "verl-project/verl"
DEMO_LINK_URL = "https://github.com/verl-project/verl/pull/6568"
DEMO_LINK_NOTE = "fixed by #6568 (OOM and missing dependencies)"
DEMO_MAINTAINER = "demo-maintainer"


def demo_config_path() -> str:
    """The demo's configuration: verl (built in) and verl-recipe, as fakehub simulates them."""
    return str(resources.files("ciflake").joinpath("demo.toml"))


def demo_config(db_url: str | None = None) -> Config:
    return load_config(demo_config_path(), db_url=db_url, env={})


def demo_database(directory: Path, end: datetime | None = None) -> str:
    """The demo's database in ``directory``, made as ``ciflake demo --no-dashboard`` makes it
    (the tests' and the screenshots' demo); its URL. ``end``: the simulation's last day
    (default: today, as the demo's; the tests fix it, so that their data is the same every
    day)."""
    from store.engine import make_engine
    from store.migrate import upgrade

    url = f"sqlite:///{directory / 'ciflake-demo.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with collect_demo(demo_config(url), engine, quiet=True, end=end, echo=lambda _: None):
        pass
    engine.dispose()
    return url


def link_demo_issue(engine: Engine) -> None:
    """The demo maintainer's link (DEMO_LINK_URL) on verl's most frequent `oom` signature with
    a deciding line, once: a demo run again keeps it as it is."""
    from sqlalchemy.orm import Session

    from store.models import KnownIssue
    from store.page_queries import signature_summary
    from store.runfilter import RunFilter
    from store.triage import link

    table = signature_summary(engine, RunFilter(repo=DEMO_LINK_REPO))
    ooms = table[(table["category"] == "oom") & table["line"].notna()]
    if ooms.empty:
        return
    signature = str(ooms.sort_values("failures", ascending=False)["signature"].iloc[0])
    with Session(engine) as session, session.begin():
        if session.get(KnownIssue, (DEMO_LINK_REPO, signature)) is None:
            link(
                session,
                DEMO_LINK_REPO,
                signature,
                DEMO_LINK_URL,
                note=DEMO_LINK_NOTE,
                set_by=DEMO_MAINTAINER,
            )


def triage_demo(config: Config, engine: Engine, now: datetime, echo: Callable[[str], None]) -> None:
    """A night of ``triage --post`` on the demo's fakehub for every repository, as of the
    simulation's ``now``, without the pause GitHub needs between two creates."""
    from ciflake.triage_night import run_triage

    for project in config.projects:
        fast = replace(project, triage=replace(project.triage, pause_seconds=0.0))
        run_triage(config, fast, engine, post=True, echo=echo, now=now)


@contextmanager
def collect_demo(
    config: Config,
    engine: Engine,
    *,
    quiet: bool = False,
    end: datetime | None = None,
    echo: Callable[[str], None] = print,
) -> Iterator[tuple[ChildHub, list[tuple[str, CollectReport]]]]:
    """Start fakehub with the demo's seed and volume in a child process, collect the history
    of every repository of ``config`` since DEMO_SINCE into ``engine`` (incrementally when run
    again), link and triage (``link_demo_issue``, ``triage_demo``: ``echo`` gets a line per
    write), and keep fakehub up while the caller runs, so that links to jobs keep working."""
    end = end or today()
    with spawned(
        seed=DEMO_SEED,
        scale=DEMO_SCALE,
        pr_scale=DEMO_PR_SCALE,
        end=end,
        rate_limit=DEMO_RATE_LIMIT,
    ) as hub:
        hub_config = config.with_overrides(api_url=hub.base_url, token=hub.token)
        options = CollectOptions(since=DEMO_SINCE, quiet=quiet)
        reports = []
        for repo, outcome in collect_all(hub_config, engine, options):
            if isinstance(outcome, CollectError):
                raise outcome  # the demo's own hub refused: nothing to show
            reports.append((repo, outcome))
        link_demo_issue(engine)
        triage_demo(hub_config, engine, end, echo)
        yield hub, reports
