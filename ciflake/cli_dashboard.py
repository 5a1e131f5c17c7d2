"""``ciflake dashboard`` and ``ciflake demo``: the commands that serve the Streamlit dashboard.

``demo`` first collects a fakehub history into a demo database. Registered on the ``ciflake``
group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ciflake.cli import State


@click.command()
@click.option("--host", metavar="H", help="Address to listen on (default: [dashboard] host).")
@click.option("--port", type=int, metavar="N", help="Port (default: [dashboard] port).")
@click.pass_obj
def dashboard(state: State, host: str | None, port: int | None) -> None:
    """Serve the Streamlit dashboard until interrupted; it only reads the database."""
    config = state.config
    _serve_dashboard(
        config.database_url,
        host or config.dashboard_host,
        port or config.dashboard_port,
        state.config_path,
    )


def _serve_dashboard(db_url: str, host: str, port: int, config_path: str | None) -> None:
    from dashboard.launch import (
        DashboardError,
        serve_until_stopped,
        start_dashboard,
        stop_dashboard,
        wait_until_ready,
    )
    from store.settings import ConfigError

    process = None
    try:  # a port in use is refused before the server starts
        process, url = start_dashboard(db_url=db_url, host=host, port=port, config_path=config_path)
        wait_until_ready(url, process)
    except DashboardError as exc:
        if process is not None:
            stop_dashboard(process)
        raise ConfigError(str(exc)) from None
    click.echo(f"dashboard: {url}  (Ctrl-C to stop)")
    serve_until_stopped(process)


@click.command()
@click.option("--port", type=int, metavar="N", help="Dashboard port (default: [dashboard] port).")
@click.option("--no-dashboard", is_flag=True, help="Stop after the collect.")
@click.pass_obj
def demo(state: State, port: int | None, no_dashboard: bool) -> None:
    """Start fakehub (a local GitHub replica with the simulated histories of verl and of its
    recipes repository), collect both into a demo database (default sqlite:///ciflake-demo.db,
    or --db), then serve the dashboard; the sidebar's Repository switches between them.

    No token and no network needed. Running it again is incremental. The two repositories are
    those of the demo's own configuration (ciflake/demo.toml), whatever --config says.
    """
    from ciflake.demo import DEMO_DB_URL, DEMO_SEED, collect_demo, demo_config, demo_config_path
    from store.engine import safe_url

    db_url = state.db_url or DEMO_DB_URL
    state.db_url = db_url
    config = demo_config(db_url)
    echo = lambda line: click.echo(f"triage: {line}")  # noqa: E731
    with collect_demo(config, state.migrated_engine(), echo=echo) as (hub, reports):
        click.echo(f"fakehub: {hub.base_url} (simulated histories, seed {DEMO_SEED})")
        for repo, report in reports:
            click.echo(f"collect: {repo}: {report.line()}")
        click.echo(f"database: {safe_url(db_url)}")
        if no_dashboard:
            return
        port = port or config.dashboard_port
        _serve_dashboard(db_url, config.dashboard_host, port, demo_config_path())
