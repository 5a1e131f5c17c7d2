"""``ciflake demo``: fakehub + collect + dashboard on one machine, with nothing to configure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine

import fakehub
from collector.once import collect_once
from collector.sync_report import CollectOptions, CollectReport
from fakehub.history import today
from store.settings import Config

DEMO_DB_URL = "sqlite:///ciflake-demo.db"
DEMO_SEED = 1
DEMO_RATE_LIMIT = 1_000_000  # requests an hour: the demo's one collect never waits for a reset
HISTORY_START = datetime(2025, 10, 1, tzinfo=UTC)  # the first day fakehub simulates


def demo_database(directory: Path) -> str:
    """The demo's database in ``directory``, made as ``ciflake demo --no-dashboard`` makes it
    (the tests' and the screenshots' demo); its URL."""
    from store.engine import make_engine
    from store.migrate import upgrade
    from store.settings import load_config

    url = f"sqlite:///{directory / 'ciflake-demo.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with collect_demo(load_config(env={}, db_url=url), engine, quiet=True):
        pass
    engine.dispose()
    return url


@contextmanager
def collect_demo(
    config: Config, engine: Engine, *, quiet: bool = False
) -> Iterator[tuple[fakehub.Hub, CollectReport]]:
    """Start fakehub with the demo's seed and scale, collect its whole history into ``engine``
    (incrementally when run again), and keep fakehub up while the caller runs, so that links
    to jobs keep working."""
    with fakehub.running(seed=DEMO_SEED, end=today(), rate_limit=DEMO_RATE_LIMIT) as hub:
        demo_config = config.with_overrides(api_url=hub.base_url, token=hub.token)
        report = collect_once(demo_config, engine, CollectOptions(since=HISTORY_START, quiet=quiet))
        yield hub, report
