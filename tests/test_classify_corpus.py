"""The classifier against the labelled corpus: accuracy per category, and a golden case per rule."""

from __future__ import annotations

from collections import Counter

import pytest

from collector.classify import Classification, load_rules
from store.vocabulary import CATEGORIES
from tests.support.classify_corpus import (
    CASES,
    CORPUS_DIR,
    classify_case,
    expected_line,
    make_corpus,
)

MIN_ACCURACY = 0.95


@pytest.fixture(scope="module")
def results() -> dict[str, Classification]:
    return {case["name"]: classify_case(case) for case in CASES}


def _correct(case: dict, result: Classification) -> bool:
    return result.category == case["category"] and result.line == expected_line(case)


def test_corpus_is_big_and_covers_every_category() -> None:
    assert len(CASES) >= 100
    per_category = Counter(case["category"] for case in CASES)
    assert {c: n for c, n in per_category.items() if n < 5} == {}
    assert set(per_category) == set(CATEGORIES)


def test_accuracy_per_category(results, capsys) -> None:
    total, correct = Counter(), Counter()
    for case in CASES:
        total[case["category"]] += 1
        correct[case["category"]] += _correct(case, results[case["name"]])
    rows = [f"{c:<20}{correct[c]:>4}/{total[c]:<4}{correct[c] / total[c]:>8.1%}" for c in total]
    overall = sum(correct.values()) / sum(total.values())
    with capsys.disabled():
        print("\nclassifier accuracy (category and line) per category:")
        print("\n".join(rows))
        print(f"{'overall':<20}{sum(correct.values()):>4}/{sum(total.values()):<4}{overall:>8.1%}")
    assert overall >= MIN_ACCURACY
    assert {c: correct[c] / total[c] for c in total if correct[c] / total[c] < MIN_ACCURACY} == {}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case(case: dict, results) -> None:
    result = results[case["name"]]
    assert (result.category, result.rule) == (case["category"], case["rule"])
    assert result.line == expected_line(case)


def test_every_rule_decides_at_least_one_case() -> None:
    decided = {case["rule"] for case in CASES}
    assert [rule.name for rule in load_rules().rules if rule.name not in decided] == []


def test_checked_in_logs_match_the_generator() -> None:
    for case in CASES:
        if case.get("has_log", True):
            log = (CORPUS_DIR / f"{case['name']}.log").read_bytes()
            assert log == make_corpus.failed_log(case), case["name"]
