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
- log compression only in ``store`` (``store.compression`` holds the stored format).

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


def module_breaches(package: str, path: str, source: str) -> list[Breach]:
    """Every breach of the contract in one module of ``package``."""
    found = []
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
