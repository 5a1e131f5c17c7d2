"""`ciflake classify FILE... [--json] [--explain]`: classify log files without a database."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from collector.classify.departures import DOC, Departure, departures_shown
from collector.classify.engine import Classification, classify_log
from collector.classify.rootcause import Step
from collector.classify.rules import RuleSet, load_rules, with_own_rules

if TYPE_CHECKING:
    from ciflake.cli import State

EXIT_UNREADABLE = 2
JSON_KEYS = ("path", "category", "rule", "signature", "line_number", "line")


def _row(
    path: Path, result: Classification, departures: list[Departure] | None
) -> dict[str, object]:
    """The JSON row; with ``departures`` (``--explain``), the explanation and the departures."""
    values = {"path": str(path), **vars(result)}
    row = {key: values[key] for key in JSON_KEYS}
    if departures is not None:
        row["explanation"] = [vars(step) for step in result.explanation]
        row["departures"] = [
            {"name": d.name, "step": d.step, "reason": d.reason} for d in departures
        ]
    return row


def _departures(path: Path, result: Classification) -> list[Departure]:
    """The procedure's departures that shaped this decision (the log is read once more)."""
    with path.open(encoding="utf-8", errors="replace") as log:
        return departures_shown(result.category, result.explanation[0].verdict, log)


def _where(step: Step) -> str:
    return f"line {step.line_number}" if step.line_number is not None else "no log line"


def _rules(state: State, repo: str | None) -> RuleSet:
    """The built-in rules, after the config's own [[rules]] when a config file is there: those
    of ``repo``, or of the only configured repository, else only the top-level ones."""
    from store.settings import config_file

    if repo is None and config_file(state.config_path, dict(os.environ)) is None:
        return load_rules()
    config = state.config
    if repo is None and len(config.projects) > 1:
        return with_own_rules(config.rules)
    return with_own_rules(config.project(repo).rules)


def explanation(
    path: Path, result: Classification, departures: list[Departure], rules: RuleSet
) -> list[str]:
    """The decision for one log as lines of text: winner, its line, then every candidate the
    procedure passed over and why (the tool for writing the next rule); a maintainer's own
    rule is said to be one, with where it is written."""
    origins = {rule.name: rule.origin for rule in rules.rules if rule.origin}
    winner, *others = result.explanation
    lines = [f"{path}: {result.category} (rule {winner.rule!r}, {_where(winner)})"]
    if winner.rule in origins:
        lines.append(f"  your own rule, from {origins[winner.rule]}")
    lines.append(f"  {winner.verdict}")
    if winner.line is not None:
        lines.append(f"  > {winner.line}")
    if result.context:
        lines.append("  context above it:")
        lines += [f"    {line}" for line in result.context]
    if others:
        lines.append("  candidates passed over:")
    for step in others:
        yours = " (your own rule)" if step.rule in origins else ""
        lines.append(f"  - {step.rule}{yours} [{step.category}], {_where(step)}: {step.verdict}")
        if step.line is not None:
            lines.append(f"      > {step.line}")
    for departure in departures:
        lines.append(f"  departs from the labelling procedure, step {departure.step} ({DOC}):")
        lines.append(f"    {departure.reason}")
    return lines


@click.command("classify")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file per line.")
@click.option(
    "--explain",
    is_flag=True,
    help="Show how each decision was made: the winning rule and line, the wrapper or earlier "
    "cause it followed, every other candidate rule with why it lost, and where the decision "
    "departs from the labelling procedure on purpose, with the documented reason.",
)
@click.option(
    "--repo",
    metavar="OWNER/NAME",
    help="Try this configured repository's own [[rules]] of the config file first, then the "
    "top-level ones (default: the only configured repository's; with several, the top-level "
    "[[rules]] only).",
)
@click.pass_obj
def classify_command(
    state: State, files: tuple[Path, ...], as_json: bool, explain: bool, repo: str | None
) -> None:
    """Classify each job log FILE: category, deciding rule, signature and the relevant line.

    The maintainers' own [[rules]] of the config file (ciflake.toml), when there is one, are
    tried before the built-in rules. An unreadable FILE is reported on stderr; the others are
    still classified, and the exit status is then 2.
    """
    rules = _rules(state, repo)
    rows: list[dict[str, object]] = []
    failed = False
    for path in files:
        try:
            result = classify_log(path, rules=rules)
            departures = _departures(path, result) if explain else None
        except OSError as exc:
            click.echo(f"ciflake: error: {path}: {exc.strerror or exc}", err=True)
            failed = True
            continue
        row = _row(path, result, departures)
        if as_json:
            click.echo(json.dumps(row, ensure_ascii=False))
        elif departures is not None:
            click.echo("\n".join(explanation(path, result, departures, rules)))
        rows.append(row)
    if not as_json and not explain and rows:
        table = Table(*JSON_KEYS, box=None, pad_edge=False)
        for row in rows:
            table.add_row(*(Text("" if row[k] is None else str(row[k])) for k in JSON_KEYS))
        Console(width=200).print(table)
    if failed:
        sys.exit(EXIT_UNREADABLE)
