"""The databases the dashboard benchmarks read: the scale-1 history, N copies of it (every run,
attempt, job and failure of scale 1 again under new ids: the same dates, denser), on SQLite and
loaded into PostgreSQL.

``CIFLAKE_BENCH_DB_DIR=DIR`` names a folder of databases built already, read and never written:
``scale1.db`` and ``x{N}.db`` (N copies) found there are used as they are; any other is built
(scale 1 into ``bench/out``, copies into a temporary folder). PostgreSQL: ``CIFLAKE_TEST_PG_URL``
names a server where the role may create databases; each size gets a fresh database, dropped
after."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, inspect, select, text
from sqlalchemy.engine import make_url

from store import rollups
from store.engine import make_engine
from store.migrate import upgrade
from store.models import Base

SCALE1_DB = Path(__file__).with_name("out") / "scale1.db"
PREBUILT_ENV = "CIFLAKE_BENCH_DB_DIR"
PG_ENV = "CIFLAKE_TEST_PG_URL"
ID_STEP = 10**12
# table -> the id columns a copy shifts by its offset; the others keep scale 1's rows
SHIFTED = {
    "workflow_runs": ("id",),
    "run_attempts": ("run_id",),
    "jobs": ("id", "run_id"),
    "job_logs": ("job_id",),
    "failures": ("run_id", "job_id"),
    # the derived tables (a database of this version): a copy's rows are its runs' rows
    "logical_runs": ("run_id",),
    "logical_jobs": ("run_id", "red_job_id"),
}
LOAD_BATCH = 5_000


def scale1_ready() -> Path:
    """The scale-1 database: the prebuilt one, or ``bench/out/scale1.db`` collected if missing,
    at the head schema (with its read indexes) and with its derived tables current, as a
    collect of this version leaves them."""
    prebuilt = _prebuilt("scale1.db")
    if prebuilt is not None:
        return prebuilt
    from analytics import derived
    from store.settings import load_config

    if not SCALE1_DB.exists():
        from bench.collector import build_scale1

        build_scale1(SCALE1_DB)
    url = f"sqlite:///{SCALE1_DB}"
    engine = make_engine(url)
    upgrade(engine)
    project = load_config(env={}, db_url=url).project()
    derived.ensure_current(engine, project.repo, project)
    engine.dispose()
    return SCALE1_DB


def _prebuilt(name: str) -> Path | None:
    """``name`` in CIFLAKE_BENCH_DB_DIR, once checked current (its derived tables those of this
    version: else every page would time the raw-row path); None when absent."""
    folder = os.environ.get(PREBUILT_ENV)
    if not folder or not (Path(folder) / name).exists():
        return None
    from analytics import derived
    from store.settings import load_config

    path = Path(folder) / name
    url = f"sqlite:///{path}"
    engine = make_engine(url, read_only=True)
    project = load_config(env={}, db_url=url).project()
    current = derived.is_current(engine, project.repo, project.job_name_strip)
    engine.dispose()
    if not current:
        raise RuntimeError(f"{path}: its derived tables are not this version's; rebuild it")
    return path


@contextmanager
def sqlite_database(copies: int, tmp: Path) -> Iterator[Path]:
    """The scale-1 database times ``copies`` (prebuilt, or built in ``tmp`` and removed)."""
    scale1 = scale1_ready()
    prebuilt = scale1 if copies == 1 else _prebuilt(f"x{copies}.db")
    if prebuilt is not None:
        yield prebuilt
        return
    path = tmp / f"x{copies}.db"
    path.write_bytes(scale1.read_bytes())
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        add_copies(conn, copies)
    engine.dispose()
    try:
        yield path
    finally:
        path.unlink()


def add_copies(conn: Connection, copies: int) -> None:
    """Add ``copies`` - 1 shifted copies of every run of scale 1 and what hangs off it (the
    same statements on SQLite and PostgreSQL)."""
    present = set(inspect(conn).get_table_names())
    for copy in range(1, copies):
        offset = copy * ID_STEP
        for table, keys in SHIFTED.items():
            if table not in present:
                continue
            columns = [column["name"] for column in inspect(conn).get_columns(table)]
            values = [
                f"CASE WHEN {c} = 0 THEN 0 ELSE {c} + {offset} END"
                if (table, c) == ("failures", "job_id")
                else (f"{c} + {offset}" if c in keys else c)
                for c in columns
            ]
            conn.execute(
                text(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"SELECT {', '.join(values)} FROM {table} WHERE {keys[0]} < {ID_STEP}"
                )
            )
    if "rollup_jobs" in present:  # the rollups count the copies' runs too
        for repo in conn.scalars(text("SELECT DISTINCT repo FROM workflow_runs")).all():
            rollups.rebuild(conn, repo)


def job_count(url: str) -> int:
    engine = make_engine(url, read_only=True)
    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM jobs")).scalar_one()
    engine.dispose()
    return int(count)


def pg_server() -> str | None:
    return os.environ.get(PG_ENV)


@contextmanager
def postgres_database(server: str, copies: int) -> Iterator[str]:
    """A fresh PostgreSQL database on ``server`` holding the scale-1 database times
    ``copies``: scale 1 loaded row by row, the copies added by the database itself; dropped
    after."""
    from tests.support.pg import drop_pg_database

    name = f"ciflake_bench_{uuid.uuid4().hex[:12]}"
    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    try:
        engine = make_engine(url)
        upgrade(engine)
        _load(scale1_ready(), engine, copies)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        engine.dispose()
        yield url
    finally:
        drop_pg_database(admin, name)
        admin.dispose()


def _load(source: Path, target: Engine, copies: int) -> None:
    """Every row of ``source`` (SQLite) into ``target``, migrated, then the copies."""
    reader = make_engine(f"sqlite:///{source}", read_only=True)
    with reader.connect() as src, target.connect() as dst:
        held = set(inspect(src).get_table_names())
        for table in Base.metadata.sorted_tables:
            if table.name not in held:
                continue
            result = src.execution_options(yield_per=LOAD_BATCH).execute(select(table))
            for rows in result.mappings().partitions():
                dst.execute(table.insert(), [dict(row) for row in rows])
        add_copies(dst, copies)
        dst.commit()
    reader.dispose()
