"""`ciflake fakehub`: serve the simulated CI histories of verl and verl-recipe on 127.0.0.1 until
Ctrl-C."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import click

from fakehub.api import CHECKS_RETENTION_DAYS
from fakehub.catalog import CATALOGS
from fakehub.history import today
from fakehub.server import DEFAULT_REPOS, DEFAULT_SCALE, DEFAULT_TOKEN, Hub


@click.command("fakehub")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=0, show_default=True, help="API port (0 picks a free one).")
@click.option("--seed", default=1, show_default=True, help="Simulation and fault seed.")
@click.option(
    "--scale",
    default=DEFAULT_SCALE,
    show_default=True,
    help="1 is about verl's real volume; the default is a small history that collects in "
    "seconds. `ciflake demo` serves --scale 1.6 --pr-scale 0.1. It scales verl-recipe too, "
    "which has about a twentieth of verl's runs.",
)
@click.option(
    "--pr-scale",
    type=float,
    default=None,
    help="Scale of the pull-request pushes on their own (default: --scale); the main branch's "
    "commits keep --scale.",
)
@click.option(
    "--repo",
    "repos",
    multiple=True,
    type=click.Choice(list(CATALOGS), case_sensitive=False),
    help="A repository to serve (repeatable; default: all). The first is the admin routes' "
    "default.",
)
@click.option("--token", default=DEFAULT_TOKEN, show_default=True, help="Accepted token.")
@click.option(
    "--faults",
    default="",
    help="Fault spec, e.g. '500=0.05,slow=0.05:2.0' (syntax: python -m pydoc fakehub.faults).",
)
@click.option(
    "--end",
    default=None,
    help="Simulation 'now' (YYYY-MM-DD, UTC); default: today. The same seed, scale and end "
    "date give the same history.",
)
@click.option("--rate-limit", default=5000, show_default=True, help="Requests per hour.")
@click.option(
    "--checks-retention-days",
    default=CHECKS_RETENTION_DAYS,
    show_default=True,
    help="Runs older than this lose their jobs and annotations, as GitHub archives them.",
)
@click.option(
    "--web-url",
    default=None,
    help="Where the payloads' html_url point (default: the served address), so that hubs on "
    "different ports serve the same links.",
)
def fakehub_command(
    host: str,
    port: int,
    seed: int,
    scale: float,
    pr_scale: float | None,
    repos: tuple[str, ...],
    token: str,
    faults: str,
    end: str | None,
    rate_limit: int,
    checks_retention_days: int,
    web_url: str | None,
) -> None:
    """Serve a local GitHub Actions API replica with simulated verl and verl-recipe CI
    histories."""
    try:
        end_at = datetime.strptime(end, "%Y-%m-%d").replace(tzinfo=UTC) if end else today()
    except ValueError:
        raise click.BadParameter(
            f"{end!r} is not a date (YYYY-MM-DD)", param_hint="--end"
        ) from None
    hub = Hub(
        seed=seed,
        scale=scale,
        pr_scale=pr_scale,
        repos=repos or DEFAULT_REPOS,
        token=token,
        faults=faults,
        end=end_at,
        host=host,
        port=port,
        rate_limit=rate_limit,
        checks_retention_days=checks_retention_days,
        web_url=web_url,
    ).start()
    pr = "" if pr_scale is None else f", pull requests {pr_scale}"
    click.echo(f"fakehub serving {', '.join(hub.repos)} at {hub.base_url}")
    click.echo(f"  token:  {hub.token}")
    click.echo(f"  logs:   {hub.blob_url}")
    volume = f"seed {seed}, scale {scale}{pr}, now {end_at:%Y-%m-%d}"
    counts = ", ".join(f"{len(hub.history(repo).runs)} {repo}" for repo in hub.repos)
    click.echo(f"  runs:   {counts} ({volume})")
    click.echo(f"  admin:  {hub.base_url}/_admin/inventory")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        click.echo("stopping")
    finally:
        hub.stop()
