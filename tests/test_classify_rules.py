"""rules.toml itself: valid categories, patterns inside the subset all three engines accept."""

from __future__ import annotations

import re
import shutil
import subprocess

import hyperscan
import pytest

from collector.classify import RULES_VERSION, load_rules
from collector.classify.rules import parse_rules
from store.vocabulary import CATEGORIES

RULES = load_rules()
PATTERNS = [p for rule in RULES.rules for p in rule.patterns]


def test_rules_are_ordered_with_a_catch_all_last() -> None:
    assert RULES.version == RULES_VERSION
    assert all(rule.category in CATEGORIES for rule in RULES.rules)
    assert RULES.catch_all.category == "unknown"
    assert len(RULES.rules) >= 30


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_compiles_in_hyperscan_and_python(pattern: str) -> None:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[pattern.encode()], ids=[0], flags=hyperscan.HS_FLAG_MULTILINE)
    re.compile(pattern)


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")
def test_patterns_are_valid_grep_extended_regexps(tmp_path) -> None:
    """The benchmark compares against `grep -E -f`: every pattern must mean the same there."""
    (tmp_path / "patterns.txt").write_text("\n".join(PATTERNS) + "\n")
    done = subprocess.run(
        ["grep", "-E", "-c", "-f", str(tmp_path / "patterns.txt"), "/dev/null"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stderr == ""


def test_boilerplate_never_decides() -> None:
    assert RULES.is_boilerplate("Process completed with exit code 1.")
    assert not RULES.is_boilerplate("Process completed with exit code 137.")
    assert not RULES.is_boilerplate("Process completed with exit code 127.")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('version="1"\n[[rule]]\nname="a"\ncategory="nope"\npatterns=["x"]', "unknown category"),
        ('version="1"\n[[rule]]\nname="a"\ncategory="oom"', "neither patterns"),
        ('version="1"\n[[rule]]\nname="a"\ncategory="oom"\npatterns=["x"]', "catch-all"),
        (
            'version="1"\n[[rule]]\nname="a"\ncategory="infra"\nrole="qualifier"\npatterns=["x"]',
            "only a qualifier, names `qualifies`",
        ),
        (
            'version="1"\n[[rule]]\nname="a"\ncategory="infra"\nqualifies=["b"]\npatterns=["x"]',
            "only a qualifier, names `qualifies`",
        ),
        (
            'version="1"\n[[rule]]\nname="a"\ncategory="infra"\nrole="qualifier"\n'
            'qualifies=["b"]\npatterns=["x"]\n[[rule]]\nname="z"\ncategory="unknown"\n'
            'patterns=["y"]',
            "qualifies unknown rules",
        ),
        (
            'version="1"\n[[rule]]\nname="a"\ncategory="oom"\nstands_for="x"\npatterns=["x"]',
            "`stands_for` needs `carries`",
        ),
    ],
)
def test_bad_rules_fail_at_load(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rules(text)
