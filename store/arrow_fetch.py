"""Big SELECTs on a SQLite file read as Arrow columns (ADBC's SQLite driver) instead of one
Python tuple per row.

At 16 copies of verl's year (``python -m bench.run dashboard``'s biggest database), reading
all 864,320 logical jobs (``store.frame_queries.derived_jobs``) took 4.5 s through
``cursor.fetchall()`` and a frame built from tuples, 0.9 s through ADBC. The frame is the
one ``pd.DataFrame(cursor.fetchall())`` gives, column for column (``tests/test_arrow_fetch.py``).
ADBC infers a column's type from the rows it reads, and a NULL-only first batch would type a
text column as integers (https://arrow.apache.org/adbc/current/python/recipe/sqlite.html): so
the whole result is read as one batch, and a column with no value at all becomes None objects,
as pandas makes it.

Used only where it reads what the caller would: an Engine on a SQLite file (a Connection may
hold uncommitted rows that another connection cannot see), in a process that has pyarrow
(a collect-only process keeps it out, ``collector.lazy``), a non-empty result; anything else,
or any error of the driver, answers None and the caller reads through its DBAPI cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import Engine, Select

if TYPE_CHECKING:
    import pandas as pd

# Rows ADBC reads before it fixes the columns' types: every row of any result we read.
ONE_BATCH = str(10**8)


def arrow_frame(bind: Any, stmt: Select[Any]) -> pd.DataFrame | None:
    """``stmt``'s rows as a DataFrame read through ADBC, or None when it does not apply."""
    if not isinstance(bind, Engine) or bind.dialect.name != "sqlite":
        return None
    path = bind.url.database
    if not path or path == ":memory:":
        return None
    uri = path if path.startswith("file:") else f"file:{quote(path)}?mode=ro"  # read-only: as is
    try:
        import adbc_driver_sqlite.dbapi as adbc
    except ImportError:
        return None
    sql, parameters = _compiled(bind, stmt)
    try:
        with adbc.connect(uri) as conn, conn.cursor() as cursor:
            cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": ONE_BATCH})
            cursor.execute(sql, parameters)
            table = cursor.fetch_arrow_table()
    except Exception:  # noqa: BLE001 - any driver error: the DBAPI path reads it instead
        return None
    if table.num_rows == 0:
        return None  # pandas types an empty result's columns as objects; let it
    frame: pd.DataFrame = table.to_pandas()
    for column in table.column_names:
        if table[column].null_count == table.num_rows:
            frame[column] = None
    return frame


def _compiled(bind: Engine, stmt: Select[Any]) -> tuple[str, tuple[Any, ...]]:
    """The SQL and positional parameters SQLAlchemy would send for ``stmt`` (IN lists expanded,
    each value through its column type's bind processing, e.g. times as UTC text)."""
    dialect = bind.dialect
    compiled = stmt.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    values = compiled.construct_params()
    parameters = []
    for name in compiled.positiontup or ():
        value = values[name]
        bind_param = compiled.binds.get(name)
        if bind_param is None:  # an item of an IN list: name_N
            bind_param = compiled.binds[name.rsplit("_", 1)[0]]
        process = bind_param.type.dialect_impl(dialect).bind_processor(dialect)
        parameters.append(value if process is None else process(value))
    return compiled.string, tuple(parameters)
