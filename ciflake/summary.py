"""``ciflake summary``: the summary of one repository's migration (or, without one, of what
happened since --since), printed, or posted on its PR as one comment edited in place; from the
first night of a backfill on, saying how far it has come. The shell joins the two layers this
needs: the report (reports.summary, from the store) and the post (collector.summary_post, to
GitHub)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import Engine

from analytics.config_tables import EventLike
from collector.client import CollectError, GitHubClient
from collector.summary_post import foreign_line, post_summary
from reports.summary import load_summary
from reports.summary_render import render_summary
from reports.summary_target import parse_since, target_number
from store.project import Project
from store.settings import Config, ConfigError

log = logging.getLogger(__name__)


def run_summary(
    config: Config,
    project: Project,
    engine: Engine,
    events: Iterable[EventLike],
    *,
    pr: int | None,
    issue: int | None,
    since: str,
    post: bool,
    now: datetime | None = None,
) -> str:
    """What ``ciflake summary`` prints: the Markdown, or with ``post`` one line saying which
    comment was created or edited (and one naming the comments of others that carry the
    marker, left alone). Problems come back as one ConfigError line, token-free."""
    if post and config.token is None:
        raise ConfigError("--post needs a token: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE")
    now = now or datetime.now(UTC)
    data = load_summary(engine, project, events, pr=pr, since=parse_since(since, now), now=now)
    body = render_summary(data)
    if not post or config.token is None:
        return body
    number = target_number(project, data.event, pr, issue)
    client = GitHubClient(config.api_url, config.token, on_wait=log.warning)
    try:
        action, url, foreign = post_summary(client, engine, project.repo, number, body)
    except CollectError as exc:
        raise ConfigError(f"summary not posted: {exc}") from None
    done = f"{action} the summary comment on #{number}: {url}"
    return f"{done}\n{foreign_line(foreign)}" if foreign else done
