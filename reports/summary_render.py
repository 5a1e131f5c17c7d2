"""The summary's Markdown (pure): the headline with the repair and rerun cost (without a change
event: the runs since --since), how far the backfill has come while it goes on, the successors'
first runs, the incidents since the last summary, the failures by group, the coverage lost and
the stale workflows, then a freshness line; every foreign text neutralised (reports.markdown)
and the whole shortened to GitHub's 65,536 characters when it must be. The comment starts with
MARKER, by which it is found again.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analytics.evidence import MAINTAINER, corrected, describe, unknown_reason
from analytics.newness import NEW_DAYS
from analytics.silence import describe_silence
from analytics.staleness import COMMITS
from reports.freshness import collected
from reports.markdown import code_block, details, link, md_text
from reports.night_tables import GROUPS, stem
from reports.summary_tables import SummaryData, Triage
from store.triage import POSTED_ACTIONS
from store.vocabulary import SUMMARY_MARKER

MARKER = SUMMARY_MARKER
FOLD_AFTER = 5  # a section with more items than this folds into <details>
MAX_FAILURES = 15  # per group, so the comment stays far below GitHub's 65,536 characters
BODY_LIMIT = 65_536  # GitHub refuses a longer comment body (422 "body is too long")
SYMBOLS = {"pass": "✅", "flaky": "🔁", "fail": "❌"}
VOCABULARY = "docs/vocabulary.md"  # the page of every definition the comment uses


def _when(moment: Any) -> str:
    return pd.Timestamp(moment).strftime("%Y-%m-%d %H:%M UTC") if not pd.isna(moment) else "?"


def _folded(heading: str, items: list[str], what: str) -> str:
    """``heading`` then the items, folded under "show N what" when there are many (N does
    not count a closing "… and N more" item)."""
    body = "\n".join(items)
    if len(items) > FOLD_AFTER:
        shown = len([item for item in items if not item.startswith("- … and ")])
        body = details(f"show {shown} {what}", body)
    return f"{heading}\n\n{body}"


def _headline(data: SummaryData) -> str:
    event = data.event
    if event is None:
        return _recent_headline(data)
    pr = f"#{int(event['event_pr'])}" if not pd.isna(event["event_pr"]) else "the change"
    lines = [
        f"## ciflake: CI since {pr}, {md_text(event['event_title'])}",
        "",
        f"Merged {_when(event['event_date'])}. Default-branch runs (push, schedule, "
        "workflow_dispatch); success = passed on the first attempt, with a 95% Wilson interval.",
        "",
    ]
    table = data.headline.set_index(["lineage", "side"])
    if table.empty:
        if data.backfill is not None:
            return "\n".join([*lines, f"No runs yet around {pr}; backfill in progress."])
        return "\n".join(
            [
                *lines,
                f"No runs around {pr}: none in the {data.window_days} days before, none since.",
            ]
        )
    if ("(all)", "after") not in table.index:
        return "\n".join([*lines, "No successor workflow has run since the change."])
    after = table.loc[("(all)", "after")]
    before_label = (
        table.loc[("(all)", "before"), "label"] if ("(all)", "before") in table.index else "no runs"
    )
    lines += [
        f"**Successors since the change: {after['label']}** vs predecessors in the "
        f"{data.window_days} days before: {before_label}.{_once(table, ('after', 'before'))}",
        "",
        "| lineage | before: predecessors | since: successors |",
        "| --- | --- | --- |",
    ]
    for lineage in [name for name in table.index.unique("lineage") if name != "(all)"]:
        cells = [_side_cell(table, lineage, side) for side in ("before", "after")]
        lines.append(f"| {md_text(lineage)} | {cells[0]} | {cells[1]} |")
    return "\n".join([*lines, *_health(data)])


def _recent_headline(data: SummaryData) -> str:
    """Without a change event: the default-branch runs since --since, per lineage."""
    lines = [
        f"## ciflake: CI of {md_text(data.repo)} since {_when(data.since)}",
        "",
        "No change event to compare with: what happened since then. Default-branch runs (push, "
        "schedule, workflow_dispatch); success = passed on the first attempt, with a 95% Wilson "
        "interval.",
        "",
    ]
    table = data.headline.set_index(["lineage", "side"])
    if table.empty:
        more = "; backfill in progress" if data.backfill is not None else ""
        return "\n".join([*lines, f"No runs yet since {_when(data.since)}{more}."])
    lines += [
        f"**All workflows: {table.loc[('(all)', 'since'), 'label']}**{_once(table, ('since',))}",
        "",
        "| lineage | runs since then |",
        "| --- | --- |",
    ]
    for lineage in [name for name in table.index.unique("lineage") if name != "(all)"]:
        lines.append(f"| {md_text(lineage)} | {_side_cell(table, lineage, 'since')} |")
    return "\n".join(lines)


def _backfill(data: SummaryData) -> str:
    """How far the backfill has come, and what of this summary it leaves out."""
    backfill = data.backfill
    if backfill is None:
        return ""
    workflows = f"{backfill.workflows} tracked workflow{'s' if backfill.workflows != 1 else ''}"
    if not backfill.history_days:
        said = f"no collect has listed the runs of the {workflows} yet; `ciflake collect` begins."
    else:
        share = backfill.listed_days / backfill.history_days
        said = (
            f"{backfill.listed_days:,.0f} of {backfill.history_days:,.0f} days of history "
            f"listed ({share:.0%}) over the {workflows}: {backfill.begun} begun, "
            f"{backfill.done} done."
        )
        if backfill.around_days:
            said += (
                f" The days around the change events: {backfill.around_listed_days:,.0f} of "
                f"{backfill.around_days:,.0f} listed"
                + (", all in." if backfill.around_listed_days == backfill.around_days else ".")
            )
    if backfill.missing:
        path, start, end = backfill.missing[0]
        more = len(backfill.missing) - 1
        said += (
            f" Not listed yet, so left out above: {md_text(stem(path))} {_when(start)} to "
            f"{_when(end)}{f' and {more} more spans' if more else ''}."
        )
    return f"⏳ **Backfill in progress**: {said}"


def _hours(value: Any) -> str:
    return f"{value:.1f} h" if not pd.isna(value) else "–"


def _minutes(low: Any, high: Any) -> str:
    return f"{low:.0f} / {high:.0f} min" if not pd.isna(low) else "–"


HEALTH_ROWS = {
    "time to repair, median (repaired / still red)": lambda row: (
        f"{_hours(row['median_repair_hours'])} ({int(row['repaired'])} / {int(row['open'])})"
    ),
    "retry tax: accelerator-hours on reruns (rerun jobs)": lambda row: (
        f"{row['accelerator_hours']:.1f} ({int(row['rerun_jobs'])})"
    ),
    "job duration p50 / p95": lambda row: _minutes(
        row["duration_p50_min"], row["duration_p95_min"]
    ),
    "queue p50 / p95": lambda row: _minutes(row["queue_p50_min"], row["queue_p95_min"]),
}


def _health(data: SummaryData) -> list[str]:
    """The repair and rerun cost of either side (analytics.health.health_table), as a table."""
    sides = data.health.set_index("side")
    if "after" not in sides.index:
        return []
    lines = [
        "",
        "| repair and cost | before: predecessors | since: successors |",
        "| --- | --- | --- |",
    ]
    for name, cell in HEALTH_ROWS.items():
        cells = [
            cell(sides.loc[side]) if side in sides.index else "no runs"
            for side in ("before", "after")
        ]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return lines


def _once(table: pd.DataFrame, sides: tuple[str, ...]) -> str:
    """The headline's "(all)" figures with each incident counted once, when an incident
    changes them: " Each incident counted once: successors … vs predecessors …"."""
    rows = {side: table.loc[("(all)", side)] for side in sides if ("(all)", side) in table.index}
    if all(row["runs_once"] == row["runs"] for row in rows.values()):
        return ""
    names = {"after": "successors", "before": "predecessors", "since": "all workflows"}
    said = " vs ".join(f"{names[side]} {row['label_once']}" for side, row in rows.items())
    return f" Each incident counted once ({VOCABULARY}): {said}."


def _side_cell(table: pd.DataFrame, lineage: str, side: str) -> str:
    if (lineage, side) not in table.index:
        return "no runs"
    row = table.loc[(lineage, side)]
    return f"{row['label']} · {md_text(row['workflows'])}"


def _strips(data: SummaryData) -> str:
    if data.strips.empty:
        return ""
    lines = ["### First runs of each successor (✅ pass · 🔁 passed on a rerun · ❌ fail)", ""]
    for path, runs in data.strips.groupby("workflow_path", sort=True):
        strip = "".join(
            link(SYMBOLS[outcome], url)
            for outcome, url in zip(runs["logical_outcome"], runs["html_url"], strict=True)
        )
        passed = int((runs["logical_outcome"] == "pass").sum())
        lines.append(f"- {md_text(stem(path))}: {strip} ({passed}/{len(runs)} first-attempt green)")
    return "\n".join(lines)


def _category(row: pd.Series) -> str:
    """The failure's category; a maintainer's with its note; for an unknown one, why
    (analytics.evidence.unknown_reason)."""
    if not isinstance(row["category"], str):
        return "not classified"
    if row["basis"] == MAINTAINER:
        return f"`{row['category']}` ({md_text(corrected(row['correction_note']))})"
    reason = unknown_reason(row["stage"], row["basis"]) if isinstance(row["basis"], str) else ""
    return md_text(reason) if reason else f"`{row['category']}`"


def _failure_item(row: pd.Series) -> str:
    where = f"{md_text(stem(row['workflow_path']))} / {md_text(row['logical_job'])}"
    facts = [
        f"**{where}**",
        _category(row),
        f"{row['verdict']}: {md_text(row['evidence'])}",
        f"runner {md_text(row['runner_name'])}" if isinstance(row["runner_name"], str) else "",
        "passed elsewhere (on another runner the same week)" if row["works_elsewhere"] else "",
        link("job", row["html_url"]),
        _when(row["created_at"]),
    ]
    item = "- " + " · ".join(fact for fact in facts if fact)
    line = row["line"] if isinstance(row["line"], str) and row["line"].strip() else None
    return item + ("\n\n" + code_block(line, indent="  ") + "\n" if line else "")


MAX_VERSIONS = 8  # environment versions named under the failures


def _environments(table: pd.DataFrame) -> str:
    """One line: the environment versions the failures' logs showed, most failures first."""
    top = table.sort_values(["failures", "fact"], ascending=[False, True]).head(MAX_VERSIONS)
    items = [
        f"{md_text(row['fact'])} {md_text(row['version'])} ×{row['failures']} (passed "
        f"elsewhere {row['works_elsewhere_share']:.0%})"
        for _, row in top.iterrows()
    ]
    more = f", and {len(table) - len(top)} more" if len(table) > len(top) else ""
    return f"Environment versions in their logs: {', '.join(items)}{more}."


def _failures(data: SummaryData, cap: int = MAX_FAILURES) -> str:
    """The failures, at most ``cap`` per group."""
    rows = data.failures
    title = f"### Failures since {_when(data.since)}: {len(rows)}"
    if rows.empty and not data.runs_since:
        more = " collected yet; backfill in progress" if data.backfill is not None else ""
        return f"{title}\n\nNo default-branch run since then{more}."
    if rows.empty:
        return f"{title}\n\nNo failed job on the default branch. 🎉"
    counts = rows["group"].value_counts()
    overview = " · ".join(f"**{group}** {counts[group]}" for group in GROUPS if group in counts)
    parts = [title, "", overview, "", f"How much of this is known: {describe(rows['basis'])}."]
    if len(data.environments):
        parts += ["", _environments(data.environments)]
    for group, heading in GROUPS.items():
        chosen = rows[rows["group"] == group]
        if chosen.empty:
            continue
        items = [_failure_item(row) for _, row in chosen.head(cap).iterrows()]
        if len(chosen) > cap:
            items.append(f"- … and {len(chosen) - cap} more (`ciflake export failures`)")
        parts += ["", _folded(f"#### {heading}: {len(chosen)}", items, "failures")]
    return "\n".join(parts)


MAX_TRIAGE = 10  # rows per triage list


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _capped(rows: pd.DataFrame, item: Any, cap: int, more: str) -> list[str]:
    """``item(row)`` for the first ``cap`` rows, then "… and N more" pointing to ``more``."""
    items = [item(row) for _, row in rows.head(cap).iterrows()]
    if len(rows) > cap:
        items.append(f"- … and {len(rows) - cap} more (see {more})")
    return items


def _with_line(item: str, row: pd.Series) -> str:
    """A list item, then its signature's deciding line in a code block (when it has one)."""
    line = row["line"] if isinstance(row["line"], str) and row["line"].strip() else None
    if line is None:
        return f"{item} · no deciding line"
    return f"{item}\n\n{code_block(line, 200, indent='  ')}\n"


def _issue(number: Any, url: Any) -> str:
    return link(f"#{int(number)}", url) if not pd.isna(number) else link(str(url), url)


def _new_signatures(triage: Triage, backfill: bool) -> list[str]:
    after = (
        "the last summary's post"
        if triage.after_summary
        else "the start of this summary: no summary was posted before"
    )
    heading = (
        f"**New signatures since the last summary** (first seen in the repository's whole "
        f"history after {_when(triage.new_from)}, {after}; not NEW, which is {NEW_DAYS} days): "
        f"{len(triage.new) or 'none'}"
        + (", of the history collected so far (backfill in progress)" if backfill else "")
    )

    def item(row: pd.Series) -> str:
        url = row["issue_url"]
        linked = f" · linked {link('issue', url)}" if isinstance(url, str) and url else ""
        said = (
            f"- `{row['signature']}` `{row['category']}` · "
            f"{_count(row['failures'], 'failure')} since {_when(row['first_seen'])}{linked}"
        )
        return _with_line(said, row)

    return [heading, *_capped(triage.new, item, MAX_TRIAGE, "`ciflake export signatures`")]


def _known_issues(triage: Triage, since: pd.Timestamp) -> list[str]:
    known = triage.known
    recurred = int(known["recurred"].notna().sum())
    heading = (
        f"**Known issues** (linked by a person or filed by ciflake), with their failures on "
        f"the default branch since {_when(since)}: {len(known) or 'none'}"
        + (f", {recurred} recurred after being closed" if recurred else "")
    )

    def item(row: pd.Series) -> str:
        state = row["state"] if isinstance(row["state"], str) else "state not read"
        facts = [
            f"- {_issue(row['issue_number'], row['url'])} {state}",
            f"`{row['signature']}` `{row['category']}`",
            _count(row["failures"], "failure")
            + (f", last {_when(row['last_seen'])}" if row["failures"] else ""),
        ]
        if not pd.isna(row["recurred_after"]):
            facts.append(
                f"**recurred after #{int(row['recurred_after'])} was closed** "
                f"({md_text(row['recurred'])})"
            )
        return " · ".join(facts)

    if known.empty:
        return [f"{heading} (`ciflake triage link SIGNATURE URL` links one)"]
    return [heading, *_capped(known, item, MAX_TRIAGE, "`ciflake triage list`")]


def _recurring(triage: Triage) -> list[str]:
    rows, settings = triage.recurring, triage.settings
    waiting = int(rows["waiting"].sum())
    heading = (
        f"**Recurring signatures without an issue** (at least {settings.min_failures} "
        f"failures in at least {settings.min_runs} runs within {settings.window_days} days on "
        f"{md_text(triage.branch)}, `[triage]`): {len(rows) or 'none'}"
        + (
            f", {waiting} of them waiting (over the nightly cap of {settings.max_new} new issues)"
            if waiting
            else ""
        )
    )

    def item(row: pd.Series) -> str:
        said = (
            f"- `{row['signature']}` `{row['category']}` · {row['failures']} failures in "
            f"{row['runs']} runs" + (" · waiting" if row["waiting"] else "")
        )
        return _with_line(said, row)

    return [heading, *_capped(rows, item, MAX_TRIAGE, "`ciflake triage`")]


def _posted(triage: Triage) -> list[str]:
    actions = triage.actions
    counts = actions["action"].value_counts()
    heading = (
        f"**Issues filed, adopted, updated, closed or reopened** by `ciflake triage --post` since "
        f"{_when(triage.new_from)}: "
        + (", ".join(f"{w} {counts[w]}" for w in POSTED_ACTIONS if w in counts) or "none")
    )

    def item(row: pd.Series) -> str:
        why = f" ({md_text(row['detail'])})" if isinstance(row["detail"], str) else ""
        return (
            f"- {row['action']} {_issue(row['issue_number'], row['url'])} for "
            f"`{row['signature']}`{why} · {_when(row['at'])}"
        )

    return [heading, *_capped(actions, item, MAX_TRIAGE, "the `triage_log` table")]


MAX_INCIDENTS = 10  # incidents named; the rest are counted


def _incidents(data: SummaryData, cap: int = MAX_INCIDENTS) -> str:
    """The incidents since the last summary (left out when there is none): each one event,
    its cause, span and what it hit."""
    rows = data.incidents
    if rows.empty:
        return ""
    after = (
        "the last summary's post"
        if data.triage.after_summary
        else "the start of this summary: no summary was posted before"
    )
    intro = (
        "Bursts of failures with one cause across many jobs, each counted as one event "
        f"({VOCABULARY}), with a failure on the default branch after "
        f"{_when(data.triage.new_from)}, {after}."
    )

    def item(row: pd.Series) -> str:
        cause = [f"`{row['category']}`"]
        if isinstance(row["runner"], str):
            cause.append(f"runner {md_text(row['runner'])}")
        if isinstance(row["signature"], str):
            cause.append(f"signature `{row['signature']}`")
        return (
            f"- **{md_text(row['label'])}** · {' · '.join(cause)} · {_when(row['started_at'])} "
            f"to {_when(row['ended_at'])} · {_count(row['jobs'], 'job')} in "
            f"{_count(row['runs'], 'run')} of {_count(row['workflows'], 'workflow')}"
        )

    items = _capped(rows, item, cap, "`ciflake export incidents`")
    return _folded(
        f"### Incidents since the last summary: {len(rows)}\n\n{intro}", items, "incidents"
    )


def _triage(data: SummaryData) -> str:
    """New signatures since the last summary, the known issues, the recurring signatures
    nobody tracks and what triage --post did: each list with its count and its basis."""
    triage = data.triage
    lists = [
        _new_signatures(triage, data.backfill is not None),
        _known_issues(triage, data.since),
        _recurring(triage),
        _posted(triage),
    ]
    return "### Triage\n\n" + "\n\n".join("\n".join(items) for items in lists)


def _coverage(data: SummaryData, cap: int | None = None) -> str:
    """The jobs the change lost, at most ``cap`` of them (None: all)."""
    lost = data.coverage_lost
    if data.event is None:
        return ""
    title = "### Coverage lost by the change"
    before = (data.headline["lineage"] == "(all)") & (data.headline["side"] == "before")
    if lost.empty and not before.any():
        more = " yet; backfill in progress" if data.backfill is not None else ""
        return (
            f"{title}\n\nNothing to compare: no predecessor run in the {data.window_days} days "
            f"before the change{more}."
        )
    if lost.empty:
        return f"{title}\n\nNone: every job that ran before has a successor."
    items = [
        f"- {md_text(row['lineage'])} / {md_text(row['logical_job'])}: ran "
        f"{row['before_runs']}× in the {data.window_days} days before, the last time in "
        f"{md_text(stem(row['last_workflow_path']))} on {_when(row['last_run_at'])}"
        for _, row in lost.head(len(lost) if cap is None else cap).iterrows()
    ]
    if len(items) < len(lost):
        items.append(f"- … and {len(lost) - len(items)} more")
    return _folded(f"### Coverage lost by the change: {len(lost)} jobs", items, "jobs")


def _silent(data: SummaryData) -> str:
    """What the comment opens with: the tracked workflows that should have run and did not
    (analytics.silence), each with its reason and since when."""
    if data.silent.empty:
        return ""
    items = [
        f"- **SILENT** {md_text(stem(row['workflow_path']))}: "
        f"{md_text(describe_silence(row['detail'], row['since']))}"
        for _, row in data.silent.iterrows()
    ]
    count = _count(len(items), "workflow")
    return f"### 🔇 {count} should have run and did not\n\n" + "\n".join(items)


def _silence(row: pd.Series) -> str:
    """How long a STALE workflow has been silent, by the rule that decided (analytics.staleness)."""
    if row["rule"] == COMMITS:
        return (
            f"no run on the {row['missed_commits']:.0f} commits since its last (usually one in "
            f"every {row['usual_gap_commits']:g})"
        )
    return (
        f"no run for {row['silent_hours']:.0f} h before the newest stored run (usually every "
        f"{row['usual_gap_hours']:.0f} h)"
    )


def _stale(data: SummaryData, cap: int | None = None) -> str:
    """The workflows that stopped running, at most ``cap`` of them (None: all)."""
    if data.stale.empty:
        return ""
    items = [
        f"- **STALE** {md_text(stem(row['workflow_path']))}: {_silence(row)}, last "
        f"{_when(row['last_run_at'])}"
        for _, row in data.stale.head(len(data.stale) if cap is None else cap).iterrows()
    ]
    if len(items) < len(data.stale):
        items.append(f"- … and {len(data.stale) - len(items)} more")
    return _folded("### Workflows that stopped running", items, "workflows")


def _freshness(data: SummaryData) -> str:
    return (
        f"<sub>Data: {md_text(data.repo)}, {collected(data.last_collect, data.now)}. Generated "
        f"{_when(data.now)} by ciflake; this comment is edited in place. Definitions (STALE, NEW, "
        f"time to repair, retry tax): {VOCABULARY} in ciflake's repository.</sub>"
    )


def github_length(text: str) -> int:
    """``text``'s length as GitHub may count it: UTF-16 code units, never fewer than the code
    points, so a body that fits by this measure fits by either."""
    return len(text.encode("utf-16-le")) // 2


# Sections that can be shortened, longest first when it must: name -> (what they list, renderer).
TRIMMABLE: dict[str, tuple[str, Any]] = {
    "failures": ("failures per group", _failures),
    "coverage": ("jobs of the coverage lost", _coverage),
    "stale": ("stopped workflows", _stale),
}
# Dropped whole, in this order, when the shortened lists are still too long (never the headline).
DROPPABLE = ("stale", "coverage", "strips", "incidents", "triage", "failures")


def _sizes(data: SummaryData) -> dict[str, int]:
    """How many items each trimmable section has (failures: its largest group)."""
    groups = data.failures["group"].value_counts()
    return {
        "failures": min(MAX_FAILURES, int(groups.max()) if len(groups) else 0),
        "coverage": len(data.coverage_lost),
        "stale": len(data.stale),
    }


def _compose(data: SummaryData, caps: dict[str, int], dropped: list[str], cut: str) -> str:
    sections = {
        "silent": _silent(data),
        "headline": _headline(data),
        "backfill": _backfill(data),
        "strips": _strips(data),
        "incidents": _incidents(data),
        "failures": _failures(data, caps["failures"]),
        "triage": _triage(data),
        "coverage": _coverage(data, caps["coverage"]),
        "stale": _stale(data, caps["stale"]),
    }
    body = [text for name, text in sections.items() if text and name not in dropped]
    return "\n\n".join([MARKER + "\n" + body[0], *body[1:], *([cut] if cut else [])]) + (
        f"\n\n{_freshness(data)}\n"
    )


def _cut_line(full: int, sizes: dict[str, int], caps: dict[str, int], dropped: list[str]) -> str:
    """The line saying what was cut to fit BODY_LIMIT."""
    cuts = [
        f"{caps[name]} of {sizes[name]} {what} shown"
        for name, (what, _) in TRIMMABLE.items()
        if caps[name] < sizes[name] and name not in dropped
    ]
    cuts += [f"the {name} section left out" for name in dropped]
    return (
        f"✂️ **Cut to fit GitHub's {BODY_LIMIT:,}-character limit** (the whole summary has "
        f"{full:,}): {'; '.join(cuts)}. Every failure: `ciflake export failures`."
    )


def render_summary(data: SummaryData, limit: int | None = BODY_LIMIT) -> str:
    """The comment's Markdown, starting with MARKER; every foreign text neutralised. Over
    ``limit`` (GitHub's, by default; None: no limit) the longest lists are shortened, then
    whole sections left out, and a line says what was cut. Each list stays folded under
    <details> and every cut is at an item's end, so the Markdown renders as before."""
    sizes = _sizes(data)
    caps, dropped = dict(sizes), []
    text = _compose(data, caps, dropped, "")
    full = github_length(text)
    if limit is None or full <= limit:
        return text
    while True:
        text = _compose(data, caps, dropped, _cut_line(full, sizes, caps, dropped))
        excess = github_length(text) - limit
        if excess <= 0:
            return text
        lengths = {
            name: github_length(render(data, caps[name]))
            for name, (_, render) in TRIMMABLE.items()
            if caps[name] > 0 and name not in dropped
        }
        if lengths:  # shorten the longest, down to the next longest or by its share
            name = max(lengths, key=lengths.__getitem__)
            others = [size for other, size in lengths.items() if other != name]
            share = max(min(excess, lengths[name] - max(others, default=0)), excess // len(lengths))
            shown = caps[name]
            caps[name] = max(0, shown - max(1, -(-shown * share // lengths[name])))
        elif len(dropped) < len(DROPPABLE):
            dropped.append(DROPPABLE[len(dropped)])
        else:  # only the headline is left and it is too long: say so, no more
            cut = _cut_line(full, sizes, caps, dropped)
            return f"{MARKER}\n{cut} The headline did not fit either.\n\n{_freshness(data)}\n"
