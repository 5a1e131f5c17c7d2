"""``ciflake triage``: what maintainers decide about a failure signature.

``link``/``unlink`` tie a signature to the issue that tracks it, ``correct``/``uncorrect`` set
a maintainer's category for its failures, ``list`` shows both. The writes live in
``store.triage``; a correction's derived rows are refreshed here, in its transaction.
Registered on the ``ciflake`` group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from ciflake.cli import State
    from store.project import Project

REPO_HELP = "A configured repository (default: the only one configured)."
BY_HELP = "Who decides it (default: $CIFLAKE_USER, else the OS user)."


@click.group(invoke_without_command=True)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.option(
    "--post",
    is_flag=True,
    help="Do the plan on GitHub (the token needs `issues: write`); without it, only print it.",
)
@click.pass_context
def triage(ctx: click.Context, repo: str | None, post: bool) -> None:
    """Known issues and corrections of failure signatures (the 12 hex characters the Failures
    page and ``ciflake classify`` show).

    Without a subcommand: tonight's plan for the recurring signatures of the default branch
    ([triage] settings): which issues it would file (at most max_new a night; the rest wait),
    update (counts changed), close (quiet for quiet_days; not an issue a person reopened) or
    reopen (failed again). Nothing is touched without --post; with it, a line per write, and
    an issue it filed before and finds again is adopted, not filed twice. One --post per
    repository at a time: a second one stops with one line."""
    if ctx.invoked_subcommand is None:
        _triage_night(ctx.obj, repo, post)


def _triage_night(state: State, repo: str | None, post: bool) -> None:
    """``ciflake triage [--post]``: ciflake.triage_night prints or does tonight's plan."""
    from ciflake.triage_night import run_triage

    project = state.config.project(repo)
    run_triage(state.config, project, state.migrated_engine(), post=post, echo=click.echo)


def _actor(by: str | None) -> str:
    """Who set a link or a correction: --by, else $CIFLAKE_USER, else the OS user."""
    import getpass

    return by or os.environ.get("CIFLAKE_USER") or getpass.getuser()


def _known(session: Session, repo: str, signature: str) -> None:
    """Refuse, in one line, a signature that no failure of ``repo`` has."""
    from store.settings import ConfigError
    from store.triage import signature_seen

    if not signature_seen(session, repo, signature):
        raise ConfigError(f"no failure of {repo} has the signature {signature!r}")


def _refresh(session: Session, project: Project, run_ids: list[int]) -> None:
    """The derived rows of ``run_ids`` (their runs' and jobs' categories) and the repository's
    incidents recomputed in the transaction that changed their failures, with its settings."""
    from analytics import derived

    derived.refresh(session.connection(), run_ids, project.job_name_strip)
    derived.refresh_incidents(session.connection(), project.repo, project.analysis.incidents)


@triage.command("link")
@click.argument("signature")
@click.argument("url")
@click.option("--note", metavar="TEXT", help="Why this issue tracks the signature.")
@click.option("--by", metavar="NAME", help=BY_HELP)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def triage_link(
    state: State, signature: str, url: str, note: str | None, by: str | None, repo: str | None
) -> None:
    """Link SIGNATURE to the issue that tracks it: a GitHub issue URL
    (https://HOST/OWNER/NAME/issues/N, whose state ``ciflake triage --post`` reads) or any
    other http(s) URL. A signature has one link: a new one replaces it."""
    from sqlalchemy.orm import Session

    from store.triage import link, parse_issue_url

    parse_issue_url(url)  # a bad URL is refused before any database work
    project = state.config.project(repo)
    with Session(state.migrated_engine()) as session, session.begin():
        _known(session, project.repo, signature)
        link(session, project.repo, signature, url, note=note, set_by=_actor(by))
    click.echo(f"linked {signature} to {url}")


@triage.command("unlink")
@click.argument("signature")
@click.option("--by", metavar="NAME", help=BY_HELP)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def triage_unlink(state: State, signature: str, by: str | None, repo: str | None) -> None:
    """Remove SIGNATURE's link to its issue (the issue itself is left as it is)."""
    from sqlalchemy.orm import Session

    from store.triage import unlink

    project = state.config.project(repo)
    with Session(state.migrated_engine()) as session, session.begin():
        removed = unlink(session, project.repo, signature, _actor(by))
        if removed is None:
            _known(session, project.repo, signature)
    click.echo(f"unlinked {signature} from {removed.url}" if removed else f"{signature}: no link")


@triage.command("correct")
@click.argument("signature")
@click.argument("category")
@click.option("--note", required=True, metavar="TEXT", help="Why: shown with the category.")
@click.option("--by", metavar="NAME", help=BY_HELP)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def triage_correct(
    state: State, signature: str, category: str, note: str, by: str | None, repo: str | None
) -> None:
    """Set CATEGORY for every failure of SIGNATURE, past and future: shown as the evidence
    "maintainer" with the note, kept by ``ciflake reclassify`` and rule upgrades. The
    classifier's own answer stays stored beside it."""
    from sqlalchemy.orm import Session

    from store.triage import correct

    project = state.config.project(repo)
    with Session(state.migrated_engine()) as session, session.begin():
        _known(session, project.repo, signature)
        runs = correct(session, project.repo, signature, category, note=note, set_by=_actor(by))
        _refresh(session, project, runs)
    click.echo(f"corrected {signature} to {category} in {len(runs)} runs")


@triage.command("uncorrect")
@click.argument("signature")
@click.option("--by", metavar="NAME", help=BY_HELP)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def triage_uncorrect(state: State, signature: str, by: str | None, repo: str | None) -> None:
    """Take back SIGNATURE's correction: its failures get the classifier's category again."""
    from sqlalchemy.orm import Session

    from store.triage import uncorrect

    project = state.config.project(repo)
    with Session(state.migrated_engine()) as session, session.begin():
        runs = uncorrect(session, project.repo, signature, _actor(by))
        if runs is None:
            _known(session, project.repo, signature)
        else:
            _refresh(session, project, runs)
    click.echo(f"{signature}: no correction" if runs is None else f"uncorrected {signature}")


@triage.command("list")
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def triage_list(state: State, repo: str | None) -> None:
    """The linked and corrected signatures of a repository, with their failures (all stored
    runs), first and last seen, the issue and its state as last read, who set what and why."""
    from rich.console import Console
    from rich.table import Table

    from store.runfilter import RunFilter
    from store.triage import triage_signatures

    project = state.config.project(repo)
    rows = triage_signatures(state.migrated_engine(), RunFilter(repo=project.repo))
    if rows.empty:
        click.echo(f"{project.repo}: no linked or corrected signature")
        return
    table = Table(
        "signature",
        "category",
        "failures",
        "first seen",
        "last seen",
        "url",
        "state",
        "note",
        "set by",
        "set at",
        box=None,
        pad_edge=False,
    )
    for row in rows.to_dict("records"):
        table.add_row(*_list_cells(row))
    Console(width=250).print(table)


def _list_cells(row: dict[Any, Any]) -> list[str]:
    """A row of ``triage list``: the link's note, author and time, then the correction's."""
    linked, corrected = isinstance(row["url"], str), isinstance(row["corrected_to"], str)
    notes = [row["note"] if linked else None, corrected and f"corrected: {row['correction_note']}"]
    by = [row["set_by"] if linked else None, row["corrected_by"] if corrected else None]
    at = [_day(row["set_at"]) if linked else "", _day(row["corrected_at"]) if corrected else ""]
    return [
        row["signature"],
        row["category"] if isinstance(row["category"], str) else "",
        str(row["failures"]),
        _day(row["first_seen"]),
        _day(row["last_seen"]),
        row["url"] if linked else "",
        (row["state"] if isinstance(row["state"], str) else "not read") if linked else "",
        "; ".join(n for n in notes if isinstance(n, str) and n),
        ", ".join(b for b in by if isinstance(b, str)),
        ", ".join(a for a in at if a),
    ]


def _day(moment: Any) -> str:
    import pandas as pd

    return "" if moment is None or pd.isna(moment) else f"{pd.Timestamp(moment):%Y-%m-%d}"
