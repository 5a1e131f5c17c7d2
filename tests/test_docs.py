"""The documentation keeps up with the code: every command, option and setting is described in
docs/commands.md or docs/configuration.md, README.md stays a newcomer's page, and nothing the
project ships points at ``../shared``, a workbench outside the repository.

The forms the checks read:

- a command: a heading whose first code span starts with its full name (``### `ciflake db
  stats` ``); its section runs to the next heading of the same or a higher level, so a group's
  section holds its subcommands';
- an option: a list item in its command's section that starts with the flag as a code span
  (``- `--max-requests N`: ...``, or ``- `--quiet`, `-q`: ...``);
- a setting: a list item that starts with the key as a code span (``- `reserve` ...``) in the
  section of a heading that names its table (``### `[collect]` ``, ``### `[[events]]` ``).

A mention in prose or in an example does not count, so deleting an option's or a setting's own
line fails here even when the text still uses it elsewhere.
"""

from __future__ import annotations

import ast
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from ciflake.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMANDS_DOC = ROOT / "docs" / "commands.md"
CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"
DEFAULTS = ROOT / "store" / "verl_defaults.toml"
README_MAX_LINES = 250
OUTSIDE = "../shared"

HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A list item's leading code spans: "- `--quiet`, `-q`: ..." or "- `--pr N` / `--issue N`".
LEADING_SPANS = r"^[ \t]*[-*+][ \t]+(?:`[^`\n]*`(?:[ \t]*[,/][ \t]*|[ \t]+or[ \t]+))*`"


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    text: str  # from its heading to the next heading of the same or a higher level


def _sections(path: Path) -> list[Section]:
    """The headings of a Markdown file (those inside fenced code are not), each with its text."""
    lines = path.read_text(encoding="utf-8").splitlines()
    headings: list[tuple[int, int, str]] = []
    fence = ""
    for i, line in enumerate(lines):
        if marker := FENCE.match(line):
            if not fence:
                fence = marker[1]
            elif marker[1].startswith(fence):
                fence = ""
            continue
        if not fence and (heading := HEADING.match(line)):
            headings.append((i, len(heading[1]), heading[2]))
    sections = []
    for n, (start, level, title) in enumerate(headings):
        end = next((i for i, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
        sections.append(Section(level, title, "\n".join(lines[start:end])))
    return sections


def _command_tree() -> dict[tuple[str, ...], tuple[click.Command, frozenset[str]]]:
    """Every command path of the ``ciflake`` group, the lazily registered ones loaded, with the
    names of its subcommands."""
    tree: dict[tuple[str, ...], tuple[click.Command, frozenset[str]]] = {}

    def walk(command: click.Command, ctx: click.Context, path: tuple[str, ...]) -> None:
        group = command if isinstance(command, click.Group) else None
        names = group.list_commands(ctx) if group else []
        tree[path] = (command, frozenset(names))
        for name in names:
            sub = group.get_command(ctx, name) if group else None
            assert sub is not None, f"{' '.join(path)} lists {name!r} but cannot load it"
            walk(sub, click.Context(sub, info_name=name, parent=ctx), (*path, name))

    walk(cli, click.Context(cli, info_name="ciflake"), ("ciflake",))
    return tree


COMMAND_TREE = _command_tree()


def _command_section(path: tuple[str, ...], subcommands: frozenset[str]) -> Section | None:
    """The first heading whose first code span is ``path``, maybe followed by its usage
    (``ciflake export TABLE``) but not by one of its subcommands."""
    for section in _sections(COMMANDS_DOC):
        span = CODE_SPAN.search(section.title)
        words = span[1].split() if span else []
        if tuple(words[: len(path)]) == path and (
            len(words) == len(path) or words[len(path)] not in subcommands
        ):
            return section
    return None


def _flags(command: click.Command) -> list[str]:
    """The long flags of every option a user can see (a short one when it has no long one);
    ``--help``, which every command has, is not among ``params``."""
    flags = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        names = [*param.opts, *param.secondary_opts]
        flags += [n for n in names if n.startswith("--")] or names[:1]
    return flags


@pytest.mark.parametrize("path", sorted(COMMAND_TREE), ids=" ".join)
def test_command_and_its_options_are_documented(path):
    command, subcommands = COMMAND_TREE[path]
    name = " ".join(path)
    section = _command_section(path, subcommands)
    assert section is not None, f"docs/commands.md has no heading naming `{name}`"
    missing = [
        flag
        for flag in _flags(command)
        if not re.search(LEADING_SPANS + re.escape(flag) + r"(?![\w-])", section.text, re.M)
    ]
    assert not missing, (
        f"`{name}`: no '- `FLAG ...`: ...' line in its section of docs/commands.md "
        f"({section.title!r}) for {', '.join(missing)}"
    )


def _setting_keys() -> list:
    """(table, key) for every key of the built-in defaults, as ``[collect]`` or ``[[events]]``,
    and for the settings that have no default ([github] token_file)."""
    from store.settings import OPTIONAL_SETTINGS

    keys: dict[tuple[str, str], None] = {}
    for name, value in tomllib.loads(DEFAULTS.read_text(encoding="utf-8")).items():
        if isinstance(value, dict):
            keys.update(dict.fromkeys((f"[{name}]", key) for key in value))
        else:  # an array of tables: the keys of all its entries
            keys.update(dict.fromkeys((f"[[{name}]]", key) for entry in value for key in entry))
    keys.update(dict.fromkeys((f"[{table}]", key) for table, key in sorted(OPTIONAL_SETTINGS)))
    return [pytest.param(table, key, id=f"{table} {key}") for table, key in keys]


def _setting_section(table: str) -> Section | None:
    """The first heading of the configuration docs that names ``table`` (``[collect]`` is not
    found in ``[[collect]]``, nor ``[[events]]`` in ``[[repositories.events]]``)."""
    pattern = re.compile(r"(?<![\[\w.])" + re.escape(table) + r"(?!\])")
    for path in (CONFIGURATION_DOC, COMMANDS_DOC):
        if path.exists():
            for section in _sections(path):
                if pattern.search(section.title):
                    return section
    return None


def _documents_setting(section: Section, key: str) -> bool:
    return bool(re.search(LEADING_SPANS + re.escape(key) + r"(?:`| *=)", section.text, re.M))


@pytest.mark.parametrize(("table", "key"), _setting_keys())
def test_setting_is_documented(table, key):
    section = _setting_section(table)
    assert section is not None, f"no heading names {table} in docs/configuration.md"
    assert _documents_setting(section, key), (
        f"{table} {key}: no '- `{key}` ...' line in the {table} section ({section.title!r})"
    )


def test_repositories_settings_are_documented():
    """Each key of a [[repositories]] entry, and the arrays of tables it may hold, each with the
    keys of the top-level array it mirrors."""
    import store.settings

    schema = store.settings._REPOSITORY
    section = _setting_section("[[repositories]]")
    assert section is not None, "no heading names [[repositories]] in docs/configuration.md"
    defaults = tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))
    missing = []
    for key in schema:
        if key in defaults and isinstance(defaults[key], list):
            inner = _setting_section(f"[[repositories.{key}]]")
            wanted = {k for entry in defaults[key] for k in entry}
            spans = set(CODE_SPAN.findall(inner.text)) if inner else set()
            missing += [f"[[repositories.{key}]] {k}" for k in sorted(wanted - spans)]
        elif not _documents_setting(section, key):
            missing.append(f"[[repositories]] {key}")
    assert not missing, f"undocumented: {', '.join(missing)}"


def test_export_columns_are_documented():
    """docs/commands.md lists each export table's columns, in order: "- `table` (...): `a, b`"."""
    from reports.tables import TABLES

    columns = {table.name: table.columns for table in TABLES.values()}
    section = _command_section(("ciflake", "export"), frozenset())
    assert section is not None
    found = re.findall(r"^- `([\w-]+)`(?: \([^()]*\))?: `([^`]+)`", section.text, re.M)
    documented = {table: [c.strip() for c in text.split(",")] for table, text in found}
    assert documented == columns
    assert set(documented) == set(TABLES)


def test_toml_examples_parse():
    for path in (README, COMMANDS_DOC, CONFIGURATION_DOC):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"^```toml\n(.*?)^```", text, re.M | re.S):
            tomllib.loads(block)  # raises, naming the line, on a broken example


def test_readme_is_a_newcomers_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): "
        "move reference material to docs/"
    )


# Not the product, or not ours: tests/ and bench/ may name the workbench; hidden directories
# are tools' caches and the venv, except the CI's.
NOT_PRODUCT = {"tests", "bench", "build", "dist", "node_modules"}
PRODUCT_SUFFIXES = {".py", ".toml", ".md", ".yml", ".yaml", ".cfg"}


def _product_files() -> list[Path]:
    files = []
    for directory, subdirs, names in os.walk(ROOT):
        here = Path(directory)
        top = here == ROOT
        subdirs[:] = [
            d
            for d in subdirs
            if not (top and d in NOT_PRODUCT)
            and not d.endswith(".egg-info")
            and (not d.startswith(".") or d in (".ci", ".github"))
        ]
        in_ci = ".ci" in here.relative_to(ROOT).parts
        files += [
            here / name
            for name in names
            if in_ci or name == "Makefile" or Path(name).suffix in PRODUCT_SUFFIXES
        ]
    return sorted(files)


def test_nothing_points_outside_the_repository():
    product = _product_files()
    assert README in product and COMMANDS_DOC in product
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in product
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n"), 1)
        if OUTSIDE in line
    ]
    assert not offenders, f"{OUTSIDE} (outside the repository) named in: {', '.join(offenders)}"


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level (not those it imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_vocabulary_names_each_function_in_the_module_that_defines_it():
    """A "Module: `m.py` (`name`, ...)" line lists names of m.py: a name another module
    defines (and m.py only imports, say) is a stale reference."""
    modules = {
        path: _defined(path)
        for package in ("analytics", "collector", "store", "reports")
        for path in (ROOT / package).rglob("*.py")
    }
    everywhere = set().union(*modules.values())
    text = (ROOT / "docs" / "vocabulary.md").read_text()
    wrong = []
    for module, listed in re.findall(r"Module: `([\w/]+\.py)`\s*\(([^)]*)\)", text):
        names = {span.split()[0] for span in CODE_SPAN.findall(listed)}
        wrong += [(module, n) for n in names & everywhere - modules[ROOT / module]]
    assert wrong == []
