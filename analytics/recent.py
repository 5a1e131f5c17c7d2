"""What a status tile says: is a workflow (or lineage) broken *now*, and is it getting better or
worse? One definition (docs/vocabulary.md "Tiles"), used by the Overview's tiles.

- The status reads the last ``recent_days`` (14 by default, ``[dashboard] recent_days``) before
  the reference moment (the newest stored run, as STALE's): RETIRED (a configured migration
  removed the workflow: it ran before the event and never after, while its lineage went on),
  SILENT (analytics.silence: disabled, its file gone, its schedule not firing), STALE
  (analytics.staleness), NO DATA (no counted run in the window), FAILING (its two latest
  counted runs failed), PASSING (every counted run of the window passed on the first attempt),
  FLAKY otherwise.
- Counted once (analytics.once): the window's success rate also with each incident's red
  runs of a lineage or workflow as one red run (``*_once``, ``label_once``); the status, trend
  and sparkline read the runs as they are.
- The trend compares the window's success rate with the ``recent_days`` before it: an arrow is
  drawn only when a two-sided Fisher exact test of pass vs not-pass says p < ``TREND_P``.
- The sparkline is the red share (flaky or fail) of the counted runs in ``SPARK_BUCKETS`` spans
  of whole UTC days from the range's first run to the reference moment, as equal as whole days
  allow (a range of fewer days repeats each day over its spans; the counts per day serve it),
  one block character each, blank where nothing ran.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.before_after import fisher_p_values
from analytics.once import INCIDENT, ONCE, label_once, run_incidents, stability_once
from analytics.rates import verdict_label
from analytics.silence import SILENT_COLUMNS, retirements
from analytics.staleness import STALE, staleness, usual_gaps
from store.project import Analysis
from store.vocabulary import COUNTED_OUTCOMES, RED_OUTCOMES

TREND_P = 0.05
SPARK_BUCKETS = 24
SPARK = "▁▂▃▄▅▆▇█"
RETIRED, FAILING, PASSING, FLAKY, NO_DATA = "RETIRED", "FAILING", "PASSING", "FLAKY", "NO DATA"
SILENT = "SILENT"
STATUSES = (SILENT, FAILING, FLAKY, STALE, NO_DATA, PASSING, RETIRED)  # the reddest first
UP, DOWN = "↑", "↓"
TILE_COLUMNS = (
    "run_id",
    "workflow_path",
    "lineage",
    "created_at",
    "event",
    "head_sha",
    "logical_outcome",
    "html_url",
)
TILE_KEYS = ("workflow_path", "lineage", "event", "head_sha", "logical_outcome")


def _window(runs: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """The runs of (start, end]: the last N days up to and with the reference moment."""
    return runs[(runs["created_at"] > start) & (runs["created_at"] <= end)]


def sparklines(counts: pd.DataFrame, by: str, first: pd.Timestamp, last: pd.Timestamp) -> pd.Series:
    """Per ``by`` value, the red share of its counted runs in SPARK_BUCKETS spans of whole UTC
    days from ``first``'s day to ``last``'s, one block character each, blank where nothing ran:
    span s holds the days from s x days / SPARK_BUCKETS (rounded down) to the next span's first
    (as equal as whole days allow), or its own first day alone where the range has fewer days
    than spans (each day's block then repeats). ``counts``: runs per ``by``, day and
    logical_outcome (``runs``; day_counts), so that the counts per day the database keeps serve
    it. Pass the range's last moment as ``last`` (an exclusive end a microsecond before)."""
    counted = counts[counts["logical_outcome"].isin(COUNTED_OUTCOMES).to_numpy()]
    start = pd.Timestamp(first).floor("D")
    days = max((pd.Timestamp(last).floor("D") - start).days + 1, 1)
    offset = ((counted["day"] - start) // pd.Timedelta(days=1)).to_numpy(dtype=np.int64)
    offset = offset.clip(0, days - 1)  # a run at the very end of a range that ends at midnight
    code, names = _codes(counted[by])
    kept = code >= 0
    cells = code[kept] * days + offset[kept]
    runs = counted["runs"].to_numpy(dtype=float)[kept]
    red = counted["logical_outcome"].isin(RED_OUTCOMES).to_numpy()[kept]
    size = len(names) * days
    per_day = [np.bincount(cells, weights=w, minlength=size) for w in (runs, runs * red)]
    # Each name's runs up to each day, then each span's as the difference at its two ends.
    ran_to, red_to = (
        np.c_[np.zeros(len(names)), w.reshape(-1, days).cumsum(axis=1)] for w in per_day
    )
    spans = np.arange(SPARK_BUCKETS)
    low = spans * days // SPARK_BUCKETS
    high = np.maximum((spans + 1) * days // SPARK_BUCKETS, low + 1)
    ran, reds = ran_to[:, high] - ran_to[:, low], red_to[:, high] - red_to[:, low]
    with np.errstate(invalid="ignore"):  # a span where nothing ran: blank
        levels = np.where(ran > 0, np.round(reds / ran * (len(SPARK) - 1)), len(SPARK))
    blocks = np.array([*SPARK, " "])[levels.astype(int)]
    return pd.Series(["".join(row) for row in blocks], index=names, dtype=object)


def day_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Logical ``runs`` (workflow_path, lineage, created_at, logical_outcome) per
    workflow_path, lineage, UTC day and logical_outcome: ``runs``, as the Overview's counts
    per day give them (store.overview_counts.run_counts)."""
    keys = ["workflow_path", "lineage", "day", "logical_outcome"]
    keyed = runs.assign(day=runs["created_at"].dt.floor("D"))
    return keyed.groupby(keys, observed=True, dropna=False).size().rename("runs").reset_index()


def failing_unread(runs: pd.DataFrame) -> list[str]:
    """The workflows of ``runs`` (logical runs with workflow_path and lineage, logical_outcome
    missing where it was not read) whose status may hang on a counted run not read: those of
    every workflow or lineage with one counted run read, a failed one, since FAILING reads its
    two latest (with none read, NO DATA comes first; with two, they are the two latest)."""
    counted = runs["logical_outcome"].isin(COUNTED_OUTCOMES).to_numpy()
    failed = runs["logical_outcome"].eq("fail").to_numpy()
    found: set[str] = set()
    for by in ("workflow_path", "lineage"):
        code, names = _codes(runs[by])
        size = len(names)
        kept = code >= 0
        read = np.bincount(code[kept & counted], minlength=size)
        red = np.bincount(code[kept & failed], minlength=size)
        alone = np.flatnonzero((read == 1) & (red == 1))
        chosen = np.isin(code, alone) & kept
        found |= {str(path) for path in runs["workflow_path"][chosen].unique() if pd.notna(path)}
    return sorted(found)


def tile_table(
    runs: pd.DataFrame,
    by: str,
    reference: pd.Timestamp | None,
    events: pd.DataFrame,
    analysis: Analysis,
    *,
    recent_days: int,
    silent: pd.DataFrame | None = None,
    members: pd.DataFrame | None = None,
    counts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per ``by`` value (workflow_path or lineage) of ``runs`` (logical runs in scope,
    with html_url; a logical_outcome may be missing outside the two windows, but not where
    FAILING reads it: failing_unread): name, status, recent_days, the window's
    runs/pass/success_rate(_low, _high) and label (analytics.rates), the same counted once
    (runs_once, success_rate(_low, _high)_once, label_once; ``members``:
    store.incidents.load_members, None: no incident), the previous window's previous_runs and
    previous_rate(_low, _high), trend (UP, DOWN or "") and trend_p, sparkline, last_run and
    last_run_url, usual_gap_hours and silent_hours (analytics.staleness), for RETIRED:
    retired_at, retired_by (the migration's PR) and successors, and for SILENT: silent_reason,
    silent_detail and silent_since (``silent``: analytics.silence.silent_workflows; None: not
    known). ``counts``: the runs per day (day_counts; None: counted from ``runs``), which the
    sparkline reads."""
    if runs.empty:
        return pd.DataFrame(columns=["name", "status"])
    tiles = _Tiles(runs, reference, events, analysis.stale_factor, silent, members, counts)
    return tiles.table(by, recent_days, analysis.min_runs)


def tile_tables(
    runs: pd.DataFrame,
    reference: pd.Timestamp | None,
    events: pd.DataFrame,
    analysis: Analysis,
    *,
    recent_days: int,
    silent: pd.DataFrame | None = None,
    members: pd.DataFrame | None = None,
    counts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``tile_table`` by lineage, then by workflow_path, with ``level`` ("lineage" or
    "workflow"): what both levels share (the sorted runs, the retirements, each workflow's
    staleness) is computed once."""
    if runs.empty:
        return pd.DataFrame(columns=["name", "status", "level"])
    tiles = _Tiles(runs, reference, events, analysis.stale_factor, silent, members, counts)
    min_runs = analysis.min_runs
    levels = (("lineage", "lineage"), ("workflow_path", "workflow"))
    return pd.concat(
        [tiles.table(by, recent_days, min_runs).assign(level=level) for by, level in levels],
        ignore_index=True,
    )


class _Tiles:
    """What every level of tiles reads of the same runs: the runs (TILE_COLUMNS only, in
    order of creation, with the incident of each red one), their counts per day, the
    reference moment, the retirements, the SILENT workflows and each workflow's staleness.
    Each level counts in numpy over its names' codes: pandas on a few thousand runs and a dozen
    names costs its overhead per call, hundreds of times per table."""

    def __init__(
        self,
        runs: pd.DataFrame,
        reference: pd.Timestamp | None,
        events: pd.DataFrame,
        stale_factor: float,
        silent: pd.DataFrame | None,
        members: pd.DataFrame | None,
        counts: pd.DataFrame | None,
    ) -> None:
        # Only the columns a tile reads: every filter and sort below copies each column it keeps,
        # and the text keys as categories: taking and hashing pyarrow text row by row, in each
        # filter and grouping, costs more than the rest of the tile.
        kept = runs[list(TILE_COLUMNS)].astype(dict.fromkeys(TILE_KEYS, "category"))
        self.runs = kept.sort_values(["created_at", "run_id"], kind="stable")
        if members is None:
            members = pd.DataFrame(columns=["run_id", INCIDENT])
        self.runs[INCIDENT] = run_incidents(self.runs, members)
        latest = self.runs["created_at"].max()
        self.end = pd.Timestamp(reference) if reference is not None else latest
        self.stale_factor = stale_factor
        self.removed = retirements(self.runs, events)
        self.gone = set(self.removed["workflow_path"])
        silent = silent if silent is not None else pd.DataFrame(columns=SILENT_COLUMNS)
        self.silent = silent[~silent["workflow_path"].isin(self.gone)].set_index("workflow_path")
        self.per_workflow = staleness(self.runs, "workflow_path", self.end, stale_factor)
        self.counts = day_counts(runs) if counts is None else counts
        outcome = self.runs["logical_outcome"]
        self.counted = outcome.isin(COUNTED_OUTCOMES).to_numpy()  # missing: not read, not here
        self.failed = (outcome == "fail").to_numpy()
        self.passed = (outcome == "pass").to_numpy()
        self.paths, self.path_names = _codes(self.runs["workflow_path"])

    def table(self, by: str, recent_days: int, min_runs: int) -> pd.DataFrame:
        runs, end = self.runs, self.end
        window = pd.Timedelta(days=recent_days)
        code, names = _codes(runs[by])
        created = runs["created_at"]
        in_recent = ((created > end - window) & (created <= end)).to_numpy()
        both = (created > end - 2 * window) & (created <= end)  # one grouping: both windows
        tagged = runs[[by, "logical_outcome"]][both].assign(_recent=in_recent[both.to_numpy()])
        windows = stability_once(tagged, runs[INCIDENT][both], [by, "_recent"], min_runs)
        recent = windows[windows.pop("_recent").astype(bool)]
        before = windows.drop(recent.index)
        table = recent.set_index(by).reindex(names)
        previous = before.set_index(by).reindex(names)
        for column in ("runs", "pass", f"runs{ONCE}"):  # a name with no run in the window: 0
            table[column] = _count(table[column])
        table["enough_data"] = table["enough_data"].eq(True).to_numpy()
        sides = pd.DataFrame(
            {
                "recent_pass": table["pass"],
                "recent_runs": table["runs"],
                "previous_pass": _count(previous["pass"]),
                "previous_runs": _count(previous["runs"]),
            }
        )
        trend_p = fisher_p_values(sides, "previous", "recent")
        better = (table["success_rate"] > previous["success_rate"]).to_numpy()
        significant = trend_p < TREND_P
        workflows = self._workflows(code, len(names))
        if by == "workflow_path":
            silence = self.per_workflow.set_index(by).reindex(names)
        else:  # the hours alone: the status is its workflows'
            silence = usual_gaps(runs, by, end).reindex(names)
            silence["status"] = self._stale_members(names, workflows)
        retired = _retired_by(names, workflows, self.removed)
        quiet = self._silent(names, workflows)
        last = np.full(len(names), -1)
        np.maximum.at(last, code[code >= 0], np.flatnonzero(code >= 0))  # the newest of each
        final = end - pd.Timedelta(microseconds=1)  # a range's end (``until``) is exclusive
        lines = sparklines(self.counts, by, created.min(), final)
        added = {  # every column at once: each one set apart copies the table's index again
            "previous_runs": sides["previous_runs"],
            "previous_pass": sides["previous_pass"],
            **{f"previous_rate{b}": previous[f"success_rate{b}"] for b in ("", "_low", "_high")},
            "trend_p": trend_p,
            "trend": np.select([significant & better, significant & ~better], [UP, DOWN], ""),
            "label": verdict_label(table),
            f"label{ONCE}": label_once(table, min_runs),
            "usual_gap_hours": silence["usual_gap_hours"],
            "silent_hours": silence["silent_hours"],
            "silent_reason": quiet["reason"],
            "silent_detail": quiet["detail"],
            "silent_since": quiet["since"],
            "status": self._statuses(code, in_recent, table["runs"], quiet, silence, retired),
            "last_run": created.array.take(last),
            "last_run_url": runs["html_url"].array.take(last),
            "sparkline": lines.reindex(names).fillna(" " * SPARK_BUCKETS),
            "recent_days": recent_days,
            "retired_at": retired["retired_at"],
            "retired_by": retired["event_pr"],
            "successors": retired["successors"],
        }
        table = pd.concat([table, pd.DataFrame(added, index=names)], axis=1)
        return table.reset_index().rename(columns={by: "name"})

    def _workflows(self, code: np.ndarray, size: int) -> list[list[str]]:
        """Each name's workflows (the names of code 0..``size``-1), sorted."""
        kept = (code >= 0) & (self.paths >= 0)
        width = max(len(self.path_names), 1)
        found: list[list[str]] = [[] for _ in range(size)]
        for pair in np.unique(code[kept].astype(np.int64) * width + self.paths[kept]):
            name, path = divmod(int(pair), width)
            found[name].append(str(self.path_names[path]))
        return found

    def _silent(self, names: pd.Index, workflows: list[list[str]]) -> pd.DataFrame:
        """SILENT per name (reason, detail, since): a workflow as analytics.silence says; a
        lineage when every one of its workflows that is not RETIRED is (their reasons, since
        the latest)."""
        if names.name == "workflow_path":
            return self.silent.reindex(names)
        silent, at = self.silent, {path: i for i, path in enumerate(self.silent.index)}
        since = silent["since"]
        reason: list[str] = silent["reason"].tolist()
        detail: list[str] = silent["detail"].tolist()
        moment: list[pd.Timestamp] = since.tolist()
        found, chosen, reasons, details = [], [], [], []
        for name, paths in zip(names, workflows, strict=True):
            rows = [at.get(path, -1) for path in paths if path not in self.gone]
            if not rows or -1 in rows:
                continue
            found.append(name)
            reasons.append("; ".join(sorted({reason[i] for i in rows})))
            details.append("; ".join(sorted({detail[i] for i in rows})))
            known = [(moment[i], i) for i in rows if pd.notna(moment[i])]
            chosen.append(max(known)[1] if known else rows[0])
        index = pd.Index(found, name=names.name, dtype=names.dtype)
        text = silent["reason"].dtype  # str, or object when nothing is SILENT
        quiet = pd.DataFrame(
            {"reason": pd.Series(reasons, index=index, dtype=text), "detail": details}, index=index
        ).astype({"detail": silent["detail"].dtype})
        quiet["since"] = since.iloc[chosen].set_axis(index)
        return quiet.reindex(names)

    def _stale_members(self, names: pd.Index, workflows: list[list[str]]) -> pd.Series:
        """A lineage is STALE when every one of its workflows that is not RETIRED is: its
        pooled gaps include its predecessors' busier days, which would call a quiet successor
        stale."""
        per_workflow = dict(
            zip(self.per_workflow["workflow_path"], self.per_workflow["status"], strict=True)
        )
        states: list[str | None] = []
        for paths in workflows:
            kept = [path for path in paths if path not in self.gone]
            every = all(per_workflow.get(path) == STALE for path in kept)
            states.append((STALE if every else "OK") if kept else None)
        return pd.Series(states, index=names, dtype=object)

    def _statuses(
        self,
        code: np.ndarray,
        in_recent: np.ndarray,
        counted_runs: pd.Series,
        quiet: pd.DataFrame,
        silence: pd.DataFrame,
        retired: pd.DataFrame,
    ) -> np.ndarray:
        """Each name's status (see the module), from its runs' codes (in order of creation)."""
        size = len(counted_runs)
        counted = self.counted & (code >= 0)
        window = counted & in_recent
        passing = (np.bincount(code[window], minlength=size) > 0) & (
            np.bincount(code[window & ~self.passed], minlength=size) == 0
        )
        rows = np.flatnonzero(counted)
        rows = rows[np.argsort(code[rows], kind="stable")]  # each name's counted runs, in order
        mine = code[rows]
        failing = np.zeros(size, dtype=bool)
        if len(rows):  # the latest two counted runs failed
            ends = np.flatnonzero(np.r_[mine[1:] != mine[:-1], True])
            before = np.maximum(ends - 1, 0)
            two = (ends >= 1) & (mine[before] == mine[ends])
            failing[mine[ends]] = two & self.failed[rows[ends]] & self.failed[rows[before]]
        return np.select(
            [
                retired["retired_at"].notna().to_numpy(),
                quiet["reason"].notna().to_numpy(),
                silence["status"].eq(STALE).to_numpy(),
                counted_runs.eq(0).to_numpy(),
                failing,
                passing,
            ],
            [RETIRED, SILENT, STALE, NO_DATA, FAILING, PASSING],
            default=FLAKY,
        )


def _count(values: pd.Series) -> pd.Series:
    """Counts of runs per name, 0 where a name has none."""
    return values.fillna(0).astype(int)


def _codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Each of ``values``' place among its distinct values sorted (-1: missing), and those."""
    code, found = pd.factorize(values)
    order = sorted(range(len(found)), key=lambda i: found[i])
    rank = np.zeros(len(found) + 1, dtype=np.int64)  # the last one: a missing value's
    rank[order] = np.arange(len(found))
    rank[-1] = -1
    return rank[code], pd.Index([found[i] for i in order], name=values.name)


def _retired_by(names: pd.Index, workflows: list[list[str]], retired: pd.DataFrame) -> pd.DataFrame:
    """``retirements`` per name: a workflow as it is; a lineage only when every one of its
    workflows was retired (then it has no successor: its coverage is lost)."""
    if names.name == "workflow_path":
        return retired.set_index("workflow_path").reindex(names)
    gone = set(retired["workflow_path"])
    whole = {name for name, paths in zip(names, workflows, strict=True) if set(paths) <= gone}
    latest: dict[str, int] = {}  # each whole lineage's latest retirement, and its last PR
    pr: dict[str, int] = {}
    for at, (lineage, date, number) in enumerate(
        zip(retired["lineage"], retired["retired_at"], retired["event_pr"], strict=True)
    ):
        if lineage in whole:
            if lineage not in latest or date > retired["retired_at"].iat[latest[lineage]]:
                latest[lineage] = at
            if lineage not in pr or pd.notna(number):
                pr[lineage] = at
    index = pd.Index(sorted(latest), name=names.name)
    out = pd.DataFrame(
        {
            "retired_at": retired["retired_at"].iloc[[latest[n] for n in index]].set_axis(index),
            "event_pr": retired["event_pr"].iloc[[pr[n] for n in index]].set_axis(index),
        },
        index=index,
    )
    return out.assign(successors="").reindex(names)
