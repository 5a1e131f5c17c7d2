"""The PostgreSQL test database is dropped even when a test leaves a connection open.

CI once failed at teardown: ``DROP DATABASE ... WITH (FORCE)`` refused because an autovacuum
worker, not our role's, was connected. The fixture now ends our own sessions and drops plainly,
which PostgreSQL itself does for autovacuum. The autovacuum race is not reproducible on demand;
the leftover connection of our own role is, and is what this test holds open.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import make_url

from store.engine import make_engine
from tests.support.pg import fresh_pg_database, required_pg_url


def exists(server: str, name: str) -> bool:
    admin = make_engine(server)
    try:
        with admin.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            )
            return found.first() is not None
    finally:
        admin.dispose()


def test_a_database_with_a_connection_left_open_is_still_dropped():
    server = required_pg_url()
    lifetime = fresh_pg_database(server)
    url = next(lifetime)
    name = make_url(url).database
    leftover = make_engine(url)
    conn = leftover.connect()
    conn.execute(text("SELECT 1"))
    assert exists(server, name)

    lifetime.close()

    assert not exists(server, name)
    conn.invalidate()
    leftover.dispose()


def test_a_test_database_does_not_wait_for_the_disk():
    """Its commits skip the flush that cost 2-3 ms each (tests.support.pg.UNSYNCED)."""
    lifetime = fresh_pg_database(required_pg_url())
    engine = make_engine(next(lifetime))
    try:
        with engine.connect() as conn:
            assert conn.scalar(text("SHOW synchronous_commit")) == "off"
    finally:
        engine.dispose()
        lifetime.close()
