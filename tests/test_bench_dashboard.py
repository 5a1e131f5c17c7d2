"""bench.dashboard measures a page's data step (the registry and the loaders that read the
database) and the database's part of it (DBAPI connect, execute, fetch, and the statements),
and its row names which part stops a page over its target."""

from __future__ import annotations

import pytest

from bench import dashboard
from bench.dashboard import Run
from reports import table_inputs


def test_a_pages_data_step_and_its_database_part_are_measured(thin_db, monkeypatch):
    monkeypatch.setenv("CIFLAKE_DB_URL", thin_db("first night"))
    dashboard._timing(monkeypatch.setattr)
    overview = dashboard.page_run("overview")
    assert 0 < overview.database < overview.data < overview.script
    assert overview.statements >= 4  # its tables: status, stability, incidents, changepoints
    # the Export page builds a table only when a download is clicked: it reads nothing
    export = dashboard.page_run("export")
    assert (export.data, export.database, export.statements) == (0, 0, 0)
    assert export.script > 0


def test_a_pages_data_step_is_every_section_of_it(thin_db, monkeypatch):
    """A page shows one section at a time (dashboard.sections); its data step is all of them,
    each opened in turn, so a section behind a tab is measured as it was on the page."""
    from reports import tables

    built: list[str] = []
    build = tables.build

    def recorded(engine, project, name, *args, **kwargs):
        built.append(name)
        return build(engine, project, name, *args, **kwargs)

    monkeypatch.setenv("CIFLAKE_DB_URL", thin_db("one run"))
    monkeypatch.setattr(tables, "build", recorded)
    dashboard._timing(monkeypatch.setattr)
    dashboard.page_run("overview")
    assert {"status", "stability", "incident-lineages", "changepoints", "job-days"} <= set(built)
    built.clear()
    dashboard.page_run("runners")
    assert {"runner-pools", "runners", "incidents", "environments"} <= set(built)


def test_a_cold_run_computes_again_the_counts_a_page_shares(thin_db, monkeypatch):
    """The forks start from a process that ran every page: the counts memo it filled
    (reports.table_inputs.shared_counts) is emptied with Streamlit's caches, or a cold run
    would skip a page's costliest statement."""
    monkeypatch.setenv("CIFLAKE_DB_URL", thin_db("first night"))
    monkeypatch.setattr(table_inputs, "_COUNTS", {})
    dashboard._prepare(thin_db("first night"), monkeypatch.setattr)
    assert table_inputs._COUNTS == {}
    flaky = dashboard.page_run("flaky_jobs")
    assert table_inputs._COUNTS  # the page's first view computed its counts again
    assert flaky.statements >= 3  # its job counts, the verdicts of its job, the repair turns


def test_the_loaders_timed_beside_the_registry_are_those_that_read_the_database():
    timed = {
        (module.__name__.rsplit(".", 1)[1], name) for module, name in dashboard._database_loaders()
    }
    assert {("shared", "events"), ("shared", "missing"), ("shared", "stamp")} <= timed
    assert {("failures", "signature_failures"), ("failures", "log_excerpt")} <= timed
    # no cached builder (timed inside reports.tables.build), nor the engine's own cache
    assert not timed & {("shared", "_built"), ("export", "table_csv"), ("shared", "engine")}


@pytest.mark.parametrize(
    ("target", "stopped"),
    [
        (0.15, "stopped by its statements (the database's part alone, 0.30 s in 6, is over "
         "the target) and our code (the pandas part alone, 0.50 s, is over the target)"),
        (0.4, "stopped by our code (the pandas part alone, 0.50 s, is over the target);"),
        (0.6, "stopped by both together: database 0.30 s, pandas 0.50 s, neither alone"),
        (0.8, None),
    ],
)  # fmt: skip
def test_a_rows_note_names_what_stops_a_page(target, stopped):
    row = dashboard._page_row("overview", "scale 1, SQLite", Run(1.56, 0.8, 0.3, 6), target, "x")
    assert row["value"] == "0.80 s" and row["met"] is (stopped is None)
    assert row["note"].startswith(
        "data 0.80 s = database 0.30 s in 6 statements + pandas 0.50 s; page script 1.56 s, "
        "of which data 0.80 s, drawing the rest"
    )
    assert ("stopped by" not in row["note"]) if stopped is None else (stopped in row["note"])
