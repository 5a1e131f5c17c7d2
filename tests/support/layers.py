"""DESIGN's layers as a contract over the source's imports, read from the AST (no import runs).

``ciflake`` (the shell) → ``collector``, ``dashboard`` → ``reports`` → ``analytics`` → ``store``;
``dashboard`` and ``reports`` never import ``collector``: reports read the store, never GitHub
(the shell posts the summary through ``collector``, and the scheduler, which runs collects and
summaries, lives in the shell above both); ``migrations`` sits beside ``store`` and reads its
models;
``fakehub`` imports nothing of ours but the vocabulary. On top of the package order:

- click (command lines) only in ``ciflake`` and ``fakehub`` (a program of its own);
- SQL only in ``store`` and ``migrations``: elsewhere sqlalchemy is imported for its types
  (``Engine``, ``Session``...) and its exceptions, never to build a statement;
- log compression only in ``store`` (``store.compression`` holds the stored format);
- one path per table (#49): a page (``dashboard``) and the nightly summary
  (``reports/summary*.py``) get every table they show from the registry (``reports.tables``).
  Of ``analytics`` and ``store`` they import only what presents a table or is no report table
  (``PRESENTING``: words, thresholds, types, the database's state, a drill-down's rows), never
  what computes one; of a family of tables (``reports/*_tables.py``) only its constants, and
  nothing of the frames the families start from (``reports.table_inputs``).

``python -m tests.support.layers`` prints every breach and exits 1 when there is one (``make
lint`` runs it); ``tests/test_layers.py`` runs it in ``make test``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What each package may import of ours (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "ciflake": frozenset({"collector", "reports", "dashboard", "analytics", "store", "fakehub"}),
    "collector": frozenset({"analytics", "store"}),
    "reports": frozenset({"analytics", "store"}),
    "dashboard": frozenset({"reports", "analytics", "store"}),
    "analytics": frozenset({"store"}),
    "store": frozenset(),
    "migrations": frozenset({"store"}),
    "fakehub": frozenset({"store.vocabulary"}),
}
OURS = frozenset(ALLOWED)
CLICK_HOMES = frozenset({"ciflake", "fakehub"})
SQL_HOMES = frozenset({"store", "migrations"})
# What a module outside SQL_HOMES may take from sqlalchemy: types to annotate with, errors.
SQLALCHEMY_TYPES = frozenset({"Engine", "Connection", "Session", "Row"})
SQLALCHEMY_ERRORS = "sqlalchemy.exc"
COMPRESSION_MODULES = frozenset({"zlib", "gzip", "bz2", "lzma"})
COMPRESSION_FREE = frozenset({"collector", "reports", "dashboard", "analytics", "ciflake"})

# The modules that show tables and must read them through reports.tables (path prefixes).
TABLE_READERS = ("dashboard/", "reports/summary")
ALL = None  # every name of the module
# What a table reader may import of analytics and store: module -> names (ALL: any of them).
PRESENTING: dict[str, frozenset[str] | None] = {
    "analytics.text": ALL,  # formatting of cells
    "analytics.spreadsheet": ALL,  # a table's CSV bytes
    "analytics.evidence": frozenset(
        {
            "KNOWN",
            "MAINTAINER",
            "PHRASES",
            "corrected",
            "describe",
            "described",
            "failure_basis",  # of one signature's newest failures (a drill-down)
            "unknown_reason",
        }
    ),
    "analytics.newness": frozenset({"NEW_DAYS"}),
    "analytics.rates": frozenset({"short_of_data"}),
    "analytics.recent": frozenset({"STATUSES", "TREND_P"}),
    "analytics.silence": frozenset({"SILENT_COLUMNS", "describe_silence"}),
    "analytics.staleness": frozenset({"COMMITS"}),
    "analytics.config_tables": frozenset({"EventLike", "event_table"}),  # the events given
    # tonight's triage plan (reports.triage_frames, shared with ``ciflake triage``): no report
    # table, the summary lists what it plans
    "analytics.triage": frozenset({"TriagePlan", "recurring"}),
    "store.settings": ALL,
    "store.vocabulary": ALL,
    "store.project": ALL,
    "store.engine": ALL,
    "store.migrate": ALL,  # the schema's revision
    "store.bookkeeping": ALL,  # the last collect, the backfill's progress, the data stamp
    "store.backfill": ALL,
    "store.events": ALL,  # the change events, configured and recorded
    "store.runfilter": ALL,  # a filter, not a table
    "store.compression": frozenset({"decompress"}),  # a job's log excerpt (a drill-down)
    "store.derived": frozenset({"repositories"}),  # the database's repositories
    "store.page_queries": frozenset(
        # the database's span; one signature's failures and one job's log (the Failures
        # page's drill-down)
        {"run_span", "latest_run_url", "signature_failures", "job_log"}
    ),
    "store.triage": frozenset({"POSTED_ACTIONS", "posted_actions", "last_summary_at"}),
}


@dataclass(frozen=True)
class Breach:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _imports(tree: ast.AST) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every absolute import, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module, tuple(alias.name for alias in node.names)


def _allowed(target: str, allowed: frozenset[str]) -> bool:
    return any(target == a or target.startswith(a + ".") for a in allowed)


def _presenting(module: str, name: str | None) -> bool:
    """Whether a table reader may take ``name`` of ``module`` (None: the module whole)."""
    allowed = PRESENTING.get(module, frozenset())
    return allowed is ALL or (name is not None and name in allowed)


def _used(tree: ast.AST, alias: str) -> set[str]:
    """The names read off ``alias`` (``alias.name``) in ``tree``: what a module imported whole
    is used for."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == alias
    }


def _taken(tree: ast.AST, module: str, names: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """(module, name) of each thing an import takes: ``from store import page_queries`` takes
    what is read off ``page_queries``; ``import analytics.once`` the module whole."""
    if not names:
        return [(module, None)]
    if module in ("analytics", "store"):  # names of modules
        return [
            (f"{module}.{name}", used) for name in names for used in _used(tree, name) or [None]
        ]
    return [(module, name) for name in names]


def table_breaches(path: str, source: str) -> list[Breach]:
    """Every table a reader (a page, the summary) would compute outside reports.tables."""
    if not path.startswith(TABLE_READERS):
        return []
    tree = ast.parse(source, path)
    found = []
    for line, module, names in _imports(tree):
        family = module.startswith("reports.") and module.endswith("_tables")
        if module == "reports.table_inputs" or family and module != "reports.summary_tables":
            builders = [n for n in names if not n.isupper() and n != "stem"]
            if not names or builders or module == "reports.table_inputs":
                found.append(Breach(path, line, f"a table built outside reports.tables: {module}"))
            continue
        if module.split(".")[0] not in ("analytics", "store"):
            continue
        denied = [
            f"{home}.{name}" if name else home
            for home, name in _taken(tree, module, names)
            if not _presenting(home, name)
        ]
        if denied:
            what = ", ".join(sorted(set(denied)))
            found.append(Breach(path, line, f"a table computed outside reports.tables: {what}"))
    return found


def module_breaches(package: str, path: str, source: str) -> list[Breach]:
    """Every breach of the contract in one module of ``package``."""
    found = table_breaches(path, source)
    for line, module, names in _imports(ast.parse(source, path)):
        top = module.split(".")[0]
        # ``from store import vocabulary, models``: each name is a module of its own to judge
        targets = [f"{module}.{n}" for n in names] if names else [module]
        upward = top in OURS and top != package
        if upward and not _allowed(module, ALLOWED[package]):
            denied = [t for t in targets if not _allowed(t, ALLOWED[package])]
            if denied:
                what = module if len(denied) == len(targets) else ", ".join(denied)
                found.append(Breach(path, line, f"{package} imports {what} (upward or sideways)"))
        if top == "click" and package not in CLICK_HOMES:
            found.append(Breach(path, line, f"click outside {sorted(CLICK_HOMES)}"))
        if top == "sqlalchemy" and package not in SQL_HOMES:
            loose = module != SQLALCHEMY_ERRORS and (
                not names or set(names) - SQLALCHEMY_TYPES or module.count(".") > 1
            )
            if loose:
                found.append(Breach(path, line, f"SQL outside store: from {module} {names}"))
        if top in COMPRESSION_MODULES and package in COMPRESSION_FREE:
            found.append(Breach(path, line, f"{module} outside store (store.compression)"))
    return found


def breaches(root: Path = ROOT) -> list[Breach]:
    """Every breach in the packages under ``root``."""
    found = []
    for package in sorted(OURS):
        for file in sorted((root / package).rglob("*.py")):
            relative = file.relative_to(root).as_posix()
            found.extend(module_breaches(package, relative, file.read_text("utf-8")))
    return found


def main() -> int:
    found = breaches()
    for breach in found:
        print(breach)
    print(f"layers: {len(found)} breach(es)" if found else "layers: the import contract holds")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
