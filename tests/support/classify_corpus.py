"""Access to the labelled log corpus in tests/fixtures/logs (cases.toml + make_corpus.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from collector.classify import Classification, classify_job

CORPUS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
sys.path.insert(0, str(CORPUS_DIR))

import make_corpus  # noqa: E402  (lives next to the fixtures it writes)

CASES: list[dict] = make_corpus.load_cases()


def classify_case(case: dict) -> Classification:
    """Classify a corpus case the way the collector would, with all of its job facts."""
    has_log = case.get("has_log", True)
    return classify_job(
        job_name=case.get("job_name"),
        failed_steps=case.get("failed_steps", ()),
        annotations=case.get("annotations", ()),
        no_jobs=case.get("no_jobs", False),
        time_limit=case.get("time_limit"),
        log=CORPUS_DIR / f"{case['name']}.log" if has_log else None,
        green_log=CORPUS_DIR / f"{case['name']}.green.log" if "green_body" in case else None,
    )


def expected_line(case: dict) -> str | None:
    return make_corpus.expected_line(case)
