from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from store import incidents
from store.engine import absolute_url, holds_password, make_engine
from store.models import Workflow
from store.upsert import upsert


def _wf(i: int, name: str = "wf") -> dict:
    return {
        "id": i,
        "repo": "o/r",
        "path": f".github/workflows/{i}.yml",
        "name": name,
        "state": "active",
        "created_at": None,
        "updated_at": None,
        "html_url": None,
    }


def test_upsert_inserts_then_updates_without_duplicates(engine):
    with Session(engine) as s, s.begin():
        upsert(s, Workflow, [_wf(i) for i in range(1, 1001)])
    with Session(engine) as s, s.begin():
        upsert(s, Workflow, [_wf(i, "renamed") for i in range(500, 1201)])
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(Workflow)) == 1200
        assert s.get(Workflow, 1).name == "wf"
        assert s.get(Workflow, 700).name == "renamed"


def test_times_come_back_as_utc(engine):
    plus_two = timezone(timedelta(hours=2))
    row = _wf(1) | {"created_at": datetime(2026, 6, 3, 9, 51, tzinfo=plus_two)}
    with Session(engine) as s, s.begin():
        upsert(s, Workflow, [row])
    with Session(engine) as s:
        assert s.get(Workflow, 1).created_at == datetime(2026, 6, 3, 7, 51, tzinfo=UTC)


@pytest.mark.sqlite_only
def test_sqlite_pragmas(engine):
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 30000


def test_read_only_engine_cannot_write(engine, db_url):
    ro = make_engine(db_url, read_only=True)
    with ro.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Workflow)).scalar() == 0
        try:
            conn.execute(text("DELETE FROM workflows"))
        except Exception as exc:  # SQLite: "readonly database"; PostgreSQL: "read-only transaction"
            assert "readonly" in str(exc) or "read-only" in str(exc)
        else:
            raise AssertionError("a read-only engine wrote to the database")


def test_urls_shown_on_a_page_work_anywhere_and_hide_passwords(tmp_path, monkeypatch):
    """The Export page's command: a relative SQLite path is made absolute (pasted in another
    directory it still names the same file); a password in either place keeps the URL off."""
    monkeypatch.chdir(tmp_path)
    assert absolute_url("sqlite:///ciflake.db") == f"sqlite:///{tmp_path / 'ciflake.db'}"
    assert absolute_url("sqlite:////srv/c.db") == "sqlite:////srv/c.db"
    assert absolute_url("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"
    assert holds_password("postgresql+psycopg://u:pw@h/d")
    assert holds_password("postgresql+psycopg://u@h/d?password=pw")
    assert not holds_password("postgresql+psycopg://u@h/d?sslmode=require")


@pytest.mark.sqlite_only
def test_exposed_jobs_reads_any_number_of_spans_once_each(thin_db):
    """Incident detection asks for the jobs of every candidate span: more than SQLite's 1,000
    terms of one expression, read in chunks; a job in two spans comes back once."""
    engine = make_engine(thin_db("one run"))
    repo = "verl-project/verl"
    everything = (datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
    jobs = incidents.exposed_jobs(engine, repo, [everything])
    assert len(jobs) > 0
    far = datetime(1990, 1, 1, tzinfo=UTC)
    spans = [(far + timedelta(hours=i), far + timedelta(hours=i, minutes=1)) for i in range(1001)]
    spans[3] = spans[1000] = everything  # in the first chunk and the last
    many = incidents.exposed_jobs(engine, repo, spans)
    key = ["run_id", "run_attempt", "job_id"]
    pd.testing.assert_frame_equal(
        many.sort_values(key, ignore_index=True), jobs.sort_values(key, ignore_index=True)
    )
    engine.dispose()
