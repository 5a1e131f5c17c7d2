"""A PostgreSQL database of a test's own, on the server that CIFLAKE_TEST_PG_URL names."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from store.engine import make_engine

# A test database's commits do not wait for the disk (``synchronous_commit``, PostgreSQL docs,
# Write Ahead Log): a commit stays atomic and visible to every later session, and survives the
# death of the process that made it (reliability/test_crash.py kills collects); only a crash
# of the server itself could lose the last ones, which no test is about. Each commit's flush
# cost 2-3 ms here, and a scale-1 collect in nights of 500 requests commits thousands of times.
# Set per database: ``CREATE DATABASE ... TEMPLATE`` does not copy it.
UNSYNCED = 'ALTER DATABASE "{name}" SET synchronous_commit = off'


def pg_url() -> str | None:
    return os.environ.get("CIFLAKE_TEST_PG_URL")


def required_pg_url() -> str:
    """The server's URL; on CI (``CI=true``) a missing URL fails instead of skipping."""
    url = pg_url()
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but CIFLAKE_TEST_PG_URL is unset: the PostgreSQL tests must run")
    pytest.skip("CIFLAKE_TEST_PG_URL is unset")


def fresh_pg_database(server: str) -> Iterator[str]:
    """A database of its own on the server, dropped afterwards with any connection left."""
    name = f"ciflake_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        conn.execute(text(UNSYNCED.format(name=name)))
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        drop_pg_database(admin, name)
        admin.dispose()


def drop_pg_database(admin: Engine, name: str) -> None:
    """Drop ``name`` even if a test left a connection open, without needing superuser.

    ``DROP DATABASE ... WITH (FORCE)`` refuses unless the role may signal *every* backend on the
    database, and an autovacuum worker is not ours: CI failed on exactly that
    ("must be a member of the role whose process is being terminated or member of
    pg_signal_backend"; PostgreSQL docs, DROP DATABASE). So end our own role's sessions
    ourselves, then drop plainly: plain DROP DATABASE signals autovacuum workers itself and waits
    up to 5 s for other backends to go (``CountOtherDBBackends`` in
    src/backend/storage/ipc/procarray.c).
    """
    with admin.connect() as conn:
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = :name AND usename = current_user AND pid <> pg_backend_pid()"
            ),
            {"name": name},
        )
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))


def wrong_password_url(password: str) -> str:
    """The test server's URL with ``password`` instead of its own: a connection it refuses."""
    return make_url(required_pg_url()).set(password=password).render_as_string(hide_password=False)
