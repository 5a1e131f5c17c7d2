"""Big values written in chunks: an archived log goes into ``job_logs.content`` without ever
being whole in the collector's memory.

The stored value is the same as a single write would store (one zlib stream in one column), so
every reader stays as it is. SQLite writes the chunks in place with incremental blob I/O
(``zeroblob`` then ``blobopen``); PostgreSQL receives them into a temporary table and joins
them on the server (``string_agg``), in the caller's transaction either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

CHUNKS = "ciflake_log_chunks"


def write_log_content(
    bind: Session | Connection, job_id: int, size: int, chunks: Iterable[bytes]
) -> None:
    """Set the ``content`` of the existing ``job_logs`` row of ``job_id`` to the concatenation
    of ``chunks``, ``size`` bytes in all, one chunk in memory at a time."""
    connection = bind.connection() if isinstance(bind, Session) else bind
    if connection.dialect.name == "sqlite":
        _write_sqlite(connection, job_id, size, chunks)
    elif connection.dialect.name == "postgresql":
        _write_postgresql(connection, job_id, chunks)
    else:  # pragma: no cover - parse_url admits only the two
        content = b"".join(chunks)
        connection.execute(
            text("UPDATE job_logs SET content = :content WHERE job_id = :job_id"),
            {"content": content, "job_id": job_id},
        )


def _write_sqlite(connection: Connection, job_id: int, size: int, chunks: Iterable[bytes]) -> None:
    connection.execute(
        text("UPDATE job_logs SET content = zeroblob(:size) WHERE job_id = :job_id"),
        {"size": size, "job_id": job_id},
    )
    rowid = connection.execute(
        text("SELECT rowid FROM job_logs WHERE job_id = :job_id"), {"job_id": job_id}
    ).scalar_one()
    written = 0
    raw = connection.connection.driver_connection
    with raw.blobopen("job_logs", "content", rowid) as blob:  # type: ignore[union-attr]
        for chunk in chunks:
            blob.write(chunk)
            written += len(chunk)
    if written != size:
        raise ValueError(f"log of job {job_id}: {written} bytes written, {size} announced")


def _write_postgresql(connection: Connection, job_id: int, chunks: Iterable[bytes]) -> None:
    connection.execute(
        text(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {CHUNKS} "
            "(seq integer PRIMARY KEY, data bytea NOT NULL) ON COMMIT DROP"
        )
    )
    connection.execute(text(f"TRUNCATE {CHUNKS}"))
    insert = text(f"INSERT INTO {CHUNKS} (seq, data) VALUES (:seq, :data)")
    for seq, chunk in enumerate(chunks):
        connection.execute(insert, {"seq": seq, "data": chunk})
    connection.execute(
        text(
            "UPDATE job_logs SET content = "
            f"(SELECT string_agg(data, ''::bytea ORDER BY seq) FROM {CHUNKS}) "
            "WHERE job_id = :job_id"
        ),
        {"job_id": job_id},
    )
    connection.execute(text(f"DROP TABLE {CHUNKS}"))
