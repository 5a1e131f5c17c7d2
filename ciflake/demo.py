"""``ciflake demo``: fakehub + collect + dashboard on one machine, with nothing to configure:
two simulated repositories (verl and its recipes repository), as ``demo.toml`` tracks them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
    with collect_demo(demo_config(url), engine, quiet=True, end=end):
        pass
    engine.dispose()
    return url


@contextmanager
def collect_demo(
    config: Config, engine: Engine, *, quiet: bool = False, end: datetime | None = None
) -> Iterator[tuple[ChildHub, list[tuple[str, CollectReport]]]]:
    """Start fakehub with the demo's seed and volume in a child process, collect the history
    of every repository of ``config`` since DEMO_SINCE into ``engine`` (incrementally when run
    again), and keep fakehub up while the caller runs, so that links to jobs keep working."""
    with spawned(
        seed=DEMO_SEED,
        scale=DEMO_SCALE,
        pr_scale=DEMO_PR_SCALE,
        end=end or today(),
        rate_limit=DEMO_RATE_LIMIT,
    ) as hub:
        hub_config = config.with_overrides(api_url=hub.base_url, token=hub.token)
        options = CollectOptions(since=DEMO_SINCE, quiet=quiet)
        reports = []
        for repo, outcome in collect_all(hub_config, engine, options):
            if isinstance(outcome, CollectError):
                raise outcome  # the demo's own hub refused: nothing to show
            reports.append((repo, outcome))
        yield hub, reports
