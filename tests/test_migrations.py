import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import event, inspect

from store.engine import make_engine
from store.migrate import alembic_config, current_revision, head_revision, upgrade
from store.models import Base


def test_single_head():
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1


def test_upgrade_downgrade_upgrade_and_models_match(db_url):
    engine = make_engine(db_url)
    with engine.begin() as conn:
        cfg = alembic_config(conn)
        command.upgrade(cfg, "head")
        command.downgrade(cfg, "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    with engine.begin() as conn:
        cfg = alembic_config(conn)
        command.upgrade(cfg, "head")
        command.check(cfg)  # raises when autogenerate would find a difference
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    assert current_revision(engine) == head_revision()


def test_upgrade_twice_is_a_no_op(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    upgrade(engine)
    assert current_revision(engine) == head_revision()


def test_a_migration_stopped_halfway_leaves_nothing_behind(db_url):
    # A collect killed while it creates the schema: here the CREATE TABLE of the jobs table
    # fails, after the tables before it were made. Nothing of the migration may stay (on
    # SQLite each CREATE used to commit on its own), so the next upgrade starts clean.
    engine = make_engine(db_url)

    def stop_at_jobs(conn, cursor, statement, *args):
        if statement.lstrip().startswith("CREATE TABLE jobs"):
            raise KeyboardInterrupt("killed")

    event.listen(engine, "before_cursor_execute", stop_at_jobs)
    with pytest.raises(KeyboardInterrupt):
        upgrade(engine)
    event.remove(engine, "before_cursor_execute", stop_at_jobs)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    engine.dispose()
