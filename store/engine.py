"""Engines and sessions: SQLite tuned for one writer and many readers, PostgreSQL for teams."""

from __future__ import annotations

import contextlib
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError

SQLITE_BUSY_TIMEOUT_MS = 30_000


class DatabaseURLError(ValueError):
    """A database URL that cannot be used; the message is one line and hides any password."""


class MissingDatabaseError(DatabaseURLError):
    """A SQLite file that does not exist yet: the one URL problem a collect fixes."""


SUPPORTED_URLS = "use sqlite:///FILE or postgresql+psycopg://USER@HOST/DB"


def parse_url(url: str) -> URL:
    """The URL, checked: SQLite or PostgreSQL, with a driver that is installed (``postgresql://``
    means psycopg, the one installed); any other is one line naming the supported forms."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseURLError(f"not a database URL: {url!r}") from None
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseURLError(f"unsupported database {safe_url(parsed)}: {SUPPORTED_URLS}")
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    try:
        parsed.get_dialect().import_dbapi()
    except (ImportError, ArgumentError):  # ArgumentError: a driver SQLAlchemy does not know
        raise DatabaseURLError(
            f"database driver {parsed.get_driver_name()!r} of {safe_url(parsed)} is not "
            f"installed: {SUPPORTED_URLS}"
        ) from None
    return parsed


def safe_url(url: URL | str) -> str:
    """The URL as it may appear in messages and logs: never with its password."""
    if isinstance(url, str):
        try:
            url = make_url(url)
        except ArgumentError:
            return "<unparseable URL>"
    return url.render_as_string(hide_password=True)


def holds_password(url: str) -> bool:
    """Whether ``url`` carries a password (``user:pw@`` or ``?password=``), which a page or a
    message must not show."""
    parsed = make_url(url)
    return parsed.password is not None or "password" in parsed.query


def absolute_url(url: str) -> str:
    """``url`` with a relative SQLite path made absolute, so that a command shown on a page
    works from any directory."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return url
    if database.startswith("file:") or Path(database).is_absolute():
        return url
    return parsed.set(database=str(Path(database).resolve())).render_as_string(hide_password=False)


def database_error(url: str, exc: SQLAlchemyError) -> str:
    """The one line for a database error a user can cause, never with the password. A failure
    to connect (no statement ran: a wrong password, a server down, a database that does not
    exist) says "cannot connect" with the server's reason, so that it is never taken for an
    empty database."""
    if isinstance(exc, OperationalError):
        reason = str(exc.orig).splitlines()[0] if exc.orig else "no reason given"
        if exc.statement is None:
            # psycopg: 'connection failed: connection to server at "H", port N failed: FATAL:
            # password authentication failed for user "U"': the reason is after FATAL
            reason = reason.rpartition("FATAL:")[2].strip().removeprefix("connection failed: ")
            return f"cannot connect to {safe_url(url)}: {reason}"
        return f"database {safe_url(url)}: {reason}"
    return f"database error: {type(exc).__name__}: {str(exc).splitlines()[0]}"


def _check_sqlite_path(url: URL, read_only: bool) -> None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    path = Path(database)
    if read_only:
        if not path.is_file():
            raise MissingDatabaseError(
                f"database file does not exist: {path} (run: ciflake db upgrade, or collect)"
            )
        return
    if not path.parent.is_dir():
        raise DatabaseURLError(f"directory does not exist for database {path}")


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode")
    if cursor.fetchone()[0] != "wal":
        # a read-only connection cannot switch modes; its readers work all the same
        with contextlib.suppress(Exception):
            cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str, *, read_only: bool = False) -> Engine:
    """An engine for ``url``. ``read_only`` opens SQLite in mode=ro, so a dashboard can never
    write or migrate the collector's database."""
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_path(parsed, read_only)
        connect_args: dict[str, object] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        if read_only and parsed.database and not parsed.database.startswith("file:"):
            path = Path(parsed.database).resolve()
            parsed = parsed.set(database=f"file:{path}?mode=ro", query={"uri": "true"})
        engine = create_engine(parsed, connect_args=connect_args)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # A server-side option, not a SET on connect: SQLAlchemy rolls back the connect-time
    # transaction, and a SET made inside it would be rolled back with it.
    options = {"options": "-c default_transaction_read_only=on"} if read_only else {}
    return create_engine(parsed, pool_pre_ping=True, connect_args=options)
