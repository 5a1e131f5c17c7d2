"""``ciflake schedule``: collect every N minutes and post the summary nightly, in one process.

APScheduler 3's ``BlockingScheduler`` (style-anchors §4) with jobs kept in memory and one
worker thread: a collect never overlaps another collect or the summary (``max_instances=1``
skips a run that is due while the last one still works), ``coalesce`` folds missed runs into
one, and ``misfire_grace_time`` lets a run that is late by less than that still happen.
APScheduler handles no SIGTERM: ``install_stop_handlers`` makes SIGTERM and SIGINT let the
running job finish (the collect commits per batch), then stop the scheduler.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.base import STATE_STOPPED
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine

from analytics.config_tables import EventLike
from ciflake.summary import run_summary
from collector.client import CollectError
from collector.once import collect_all
from collector.sync_report import CollectOptions
from store.project import Project
from store.settings import Config, ConfigError

log = logging.getLogger("ciflake.schedule")

MISFIRE_GRACE_S = 600  # APScheduler's default of 1 s would drop a run after any busy second


@dataclass(frozen=True)
class Triggers:
    """When each job runs; tests pass fast ones."""

    collect: BaseTrigger
    summary: BaseTrigger


def config_triggers(config: Config) -> Triggers:
    """Collect every [collect] interval_minutes; the summary daily at [summary] nightly_at UTC."""
    hour, minute = (int(part) for part in config.summary_nightly_at.split(":"))
    return Triggers(
        collect=IntervalTrigger(minutes=config.interval_minutes, timezone=UTC),
        summary=CronTrigger(hour=hour, minute=minute, timezone=UTC),
    )


def build_scheduler(
    collect: Callable[[], None],
    summary: Callable[[], None],
    triggers: Triggers,
    *,
    misfire_grace_time: float = MISFIRE_GRACE_S,
) -> BlockingScheduler:
    """A scheduler with the two jobs; the first collect is due at once."""
    scheduler = BlockingScheduler(
        timezone=UTC,
        executors={"default": ThreadPoolExecutor(max_workers=1)},
        job_defaults={
            "coalesce": True,
            "max_instances": 1,
            "misfire_grace_time": misfire_grace_time,
        },
    )
    scheduler.add_job(
        collect, triggers.collect, id="collect", name="collect", next_run_time=datetime.now(UTC)
    )
    scheduler.add_job(summary, triggers.summary, id="summary", name="summary")
    return scheduler


def install_stop_handlers(scheduler: BlockingScheduler) -> None:
    """SIGTERM and SIGINT: wait for the running job, then stop (``start()`` returns)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        if scheduler.state == STATE_STOPPED:
            return
        log.info("%s: letting the running job finish, then stopping", signal.Signals(signum).name)
        scheduler.shutdown(wait=True)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)


def collect_job(config: Config, engine: Engine) -> Callable[[], None]:
    """One incremental collect of every configured repository, logged with one line each; a
    repository's failure is logged, the others go on, and the next interval tries again."""

    def run() -> None:
        log.info("collect: started")
        for repo, outcome in collect_all(config, engine, CollectOptions(quiet=True)):
            if isinstance(outcome, CollectError):
                log.error("collect of %s failed: %s", repo, outcome)
            else:
                log.info("collect: %s: %s", repo, outcome.line())

    return run


def summary_job(
    config: Config, engine: Engine, events: Callable[[Project], Iterable[EventLike]]
) -> Callable[[], None]:
    """The nightly summary of each configured repository, about the migration of its summary
    PR (else its latest migration): posted when a token is set, else printed to stdout. One
    repository's failure is logged and the others go on."""

    def run() -> None:
        post = config.token is not None
        for project in config.projects:
            try:
                text = run_summary(
                    config,
                    project,
                    engine,
                    events(project),
                    pr=project.summary_pr,
                    issue=None,
                    since="24h",
                    post=post,
                )
            except ConfigError as exc:
                log.error("summary of %s failed: %s", project.repo, exc)
                continue
            except Exception:  # one repository's broken summary never stops the others'
                log.exception("summary of %s failed", project.repo)
                continue
            if post:
                log.info("summary of %s: %s", project.repo, text)
            else:
                print(text, flush=True)
                log.info("summary of %s: printed (no token to post it)", project.repo)

    return run


def configure_logging() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def run_schedule(
    config: Config,
    engine: Engine,
    events: Callable[[Project], Iterable[EventLike]],
    triggers: Triggers | None = None,
) -> None:
    """Run until SIGTERM or SIGINT; returns after the running job finished."""
    configure_logging()
    scheduler = build_scheduler(
        collect_job(config, engine),
        summary_job(config, engine, events),
        triggers or config_triggers(config),
    )
    install_stop_handlers(scheduler)
    log.info(
        "schedule: collect every %d min, summary daily at %s UTC (%s); SIGTERM or Ctrl-C stops",
        config.interval_minutes,
        config.summary_nightly_at,
        "posted" if config.token else "printed",
    )
    scheduler.start()
    log.info("schedule: stopped")
