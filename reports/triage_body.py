"""The issue ``ciflake triage --post`` files for a recurring signature: its title, and a body
that carries the hidden MARKER (by which ciflake finds its issues again) and a counts section
between COUNTS_START and COUNTS_END that each night rewrites, keeping whatever a person wrote
outside it. Every foreign text (log lines, names) is neutralised as in the summary."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import pandas as pd

from analytics.triage import Draft
from reports.markdown import link, md_text, one_line, unping
from reports.summary_render import github_length
from store.vocabulary import COUNTS_END, COUNTS_START, TRIAGE_MARKER

BODY_LIMIT = 65_536  # GitHub: 422 "body is too long (maximum is 65536 characters)"
TITLE_LIMIT = 256  # GitHub: 422 "title is too long"
CAPS = (20, 5, 1)  # rows per table, tried in turn until the body fits
CONTEXT_LINES = 20


def marker(signature: str) -> str:
    """The hidden first line of ciflake's issue for ``signature``."""
    return TRIAGE_MARKER.format(signature=signature)


@dataclass(frozen=True)
class Signature:
    """What an issue says about one signature: its window's stats and failures."""

    signature: str
    category: str
    line: str
    failures: int
    runs: int
    first_seen: pd.Timestamp
    last_seen: pd.Timestamp
    window_days: int
    branch: str
    rows: pd.DataFrame  # its failures in the window (workflow_name, runner_name, html_url, ...)
    context: tuple[str, ...] = ()


def title(item: Signature) -> str:
    """``[ciflake] CATEGORY: the deciding line``, at most TITLE_LIMIT characters."""
    return one_line(f"[ciflake] {item.category}: {item.line}", TITLE_LIMIT)


def _block(lines: list[str]) -> str:
    """Foreign lines in a fenced block no line can close, with no mention or reference."""
    text = "\n".join(unping(one_line(line, 300)) for line in lines) or " "
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _table(rows: pd.DataFrame, column: str, heading: str, cap: int) -> list[str]:
    counts = rows[column].fillna("(none)").astype(str).value_counts()
    lines = [f"| {heading} | Failures |", "| --- | ---: |"]
    lines += [f"| {md_text(name, 120)} | {n} |" for name, n in counts.head(cap).items()]
    if len(counts) > cap:
        lines.append(f"| ✂️ {len(counts) - cap} more not shown (cut to fit) | |")
    return lines


def _latest(rows: pd.DataFrame, cap: int) -> list[str]:
    latest = rows.sort_values("created_at", ascending=False).drop_duplicates("run_id").head(cap)
    return [
        f"- {link(f'{r.workflow_name} run {r.run_id}', r.html_url)}, "
        f"{r.created_at:%Y-%m-%d %H:%M} UTC"
        for r in latest.itertuples()
    ]


def counts_section(item: Signature, cap: int = CAPS[0]) -> str:
    """The section each night rewrites: counts by workflow and runner, and the latest runs."""
    lines = [
        COUNTS_START,
        f"### Last {item.window_days} days on `{md_text(item.branch)}`",
        "",
        f"**{item.failures}** failures in **{item.runs}** runs; first seen "
        f"{item.first_seen:%Y-%m-%d %H:%M} UTC, last seen {item.last_seen:%Y-%m-%d %H:%M} UTC.",
        "",
        *_table(item.rows, "workflow_name", "Workflow", cap),
        "",
        *_table(item.rows, "runner_name", "Runner", cap),
        "",
        "Latest runs:",
        "",
        *_latest(item.rows, cap),
        COUNTS_END,
    ]
    return "\n".join(lines)


def draft(item: Signature) -> Draft:
    """The issue for ``item``, at most BODY_LIMIT characters: the tables are cut, and say so,
    when they would not fit."""
    head = [
        marker(item.signature),
        f"ciflake found this failure signature recurring on the default branch "
        f"(`{item.signature}`, category **{md_text(item.category)}**). It edits only the "
        "counts below, nightly; write anything you like outside them. It closes this issue "
        "when the signature has been quiet for a while, and reopens it if it comes back.",
        "",
        "Deciding line:",
        "",
        _block([item.line]),
    ]
    if item.context:
        head += [
            "",
            "<details><summary>Context</summary>",
            "",
            _block(list(item.context)[:CONTEXT_LINES]),
        ]
        head += ["", "</details>"]
    for cap in CAPS:  # the deciding line and context are capped: one row a table always fits
        section = counts_section(item, cap)
        text = "\n".join([*head, "", section, ""])
        if github_length(text) <= BODY_LIMIT:
            break
    sha = hashlib.sha256(section.encode("utf-8")).hexdigest()
    return Draft(title(item), text, section, sha, item.category)
