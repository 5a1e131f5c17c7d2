"""`ciflake classify FILE... [--json]`: classify log files without a database."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from collector.classify.engine import Classification, classify_log

EXIT_UNREADABLE = 2
JSON_KEYS = ("path", "category", "rule", "signature", "line_number", "line")


def _row(path: Path, result: Classification) -> dict[str, object]:
    values = {"path": str(path), **vars(result)}
    return {key: values[key] for key in JSON_KEYS}


@click.command("classify")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file per line.")
def classify_command(files: tuple[Path, ...], as_json: bool) -> None:
    """Classify each job log FILE: category, deciding rule, signature and the relevant line.

    An unreadable FILE is reported on stderr; the others are still classified, and the exit
    status is then 2.
    """
    rows: list[dict[str, object]] = []
    failed = False
    for path in files:
        try:
            row = _row(path, classify_log(path))
        except OSError as exc:
            click.echo(f"ciflake: error: {path}: {exc.strerror or exc}", err=True)
            failed = True
            continue
        if as_json:
            click.echo(json.dumps(row, ensure_ascii=False))
        rows.append(row)
    if not as_json and rows:
        table = Table(*JSON_KEYS, box=None, pad_edge=False)
        for row in rows:
            table.add_row(*(Text("" if row[k] is None else str(row[k])) for k in JSON_KEYS))
        Console(width=200).print(table)
    if failed:
        sys.exit(EXIT_UNREADABLE)
