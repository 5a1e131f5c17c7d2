"""What the tests of ``ciflake triage --post`` share: a [triage] config for the shared collected
database, GitHub's issues as the running fakehub holds them, and a failure added to the
database as a later collect would store it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from fakehub import Hub
from fakehub.web import Response
from store.engine import make_engine
from store.models import Failure, WorkflowRun

REPO = "verl-project/verl"
# The default scenario's default branch over 400 days (its whole year): seven signatures fail
# at least twice in two runs: a time limit four times on four runners (one signature since
# rules 2026.12.10 mask the runner's name), an abort three times in two runs, five others
# twice. The three largest (then by signature) are filed, the others wait. Their latest
# failures are weeks before the history's end. FAILURES: each one's failures and runs.
FILED = ("81a9e9c8ee2d", "70305712d4ca", "3d62f2e03eba")
WAITING = ("3e1f302885da", "8a011d5ab299", "bf396b2ec797", "d7d54dd340ba")
FAILURES = {"81a9e9c8ee2d": (4, 4), "70305712d4ca": (3, 2), "3d62f2e03eba": (2, 2)}


def triage_config(directory: Path, **settings: int | float) -> Path:
    """A ciflake.toml whose [triage] makes the shared database's signatures recurring, with
    no pause between creates; ``settings`` override its keys."""
    values: dict[str, int | float] = {
        "window_days": 400,
        "min_failures": 2,
        "max_new": 3,
        "pause_seconds": 0,
        **settings,
    }
    path = directory / "ciflake.toml"
    path.write_text("[triage]\n" + "".join(f"{k} = {v}\n" for k, v in values.items()))
    return path


def hub_issues(hub: Hub) -> dict[int, dict[str, Any]]:
    """The issues filed on the hub's repository, by number, as fakehub stores them (a copy)."""
    return copy.deepcopy(hub.app.repos[REPO].tracker.issues)


def hub_comments(hub: Hub, number: int) -> list[tuple[str, str]]:
    """(author, body) of each comment of the issue, oldest first."""
    return [(c["login"], c["body"]) for c in hub.app.repos[REPO].comments.get(number, [])]


def wrap_route(
    hub: Hub, name: str, wrapper: Callable[[Callable[..., Response]], Callable[..., Response]]
) -> None:
    """Serve the hub repository's route ``name`` (e.g. "create_issue") through
    ``wrapper(the route's handler)``: a GitHub that behaves otherwise for one test."""
    api = hub.app.repos[REPO]
    index = next(i for i, route in enumerate(api.routes) if route[0] == name)
    name, method, pattern, handler = api.routes[index]
    api.routes[index] = (name, method, pattern, wrapper(handler))


def fail_again(db_url: str, signature: str, at: datetime) -> None:
    """A new default-branch run at ``at`` failing with ``signature``: a copy of its latest
    default-branch run and failure, as a later collect would store them."""
    engine = make_engine(db_url)
    try:
        with Session(engine) as session, session.begin():
            failure = session.scalars(
                select(Failure)
                .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
                .where(
                    Failure.signature == signature,
                    WorkflowRun.head_branch == "main",
                    WorkflowRun.event != "pull_request",
                )
                .order_by(WorkflowRun.created_at.desc())
            ).first()
            assert failure is not None, signature
            run = session.get(WorkflowRun, failure.run_id)
            new_id = int(session.scalar(select(func.max(WorkflowRun.id))) or 0) + 1
            session.add(WorkflowRun(**{**columns(run), "id": new_id, "created_at": at}))
            session.flush()
            session.add(Failure(**{**columns(failure), "run_id": new_id}))
    finally:
        engine.dispose()


def columns(row: Any) -> dict[str, Any]:
    """An ORM row's column values by attribute: a copy of it is ``type(row)(**columns(row))``."""
    return {attr.key: getattr(row, attr.key) for attr in type(row).__mapper__.column_attrs}
