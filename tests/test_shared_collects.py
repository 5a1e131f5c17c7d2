"""The session's shared builds (tests/support/collected.py): made once whichever worker asks
first, the same answer for every one, and a failed build started again from nothing."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from tests.support.collected import SHARED_ENV, Scenario, built_once


def _build(path: Path) -> str:
    with open(path.parent / "builds.log", "a") as log:
        log.write("built\n")
    path.write_text("made")
    return f"answer from {multiprocessing.current_process().name}"


def _ask(shared: str, answers) -> None:
    import os

    os.environ[SHARED_ENV] = shared
    path, answer = built_once("thing", _build)
    answers.put((path.read_text(), answer))


def test_a_build_runs_once_for_every_process_that_asks(tmp_path):
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    askers = [context.Process(target=_ask, args=(str(tmp_path), answers)) for _ in range(4)]
    for asker in askers:
        asker.start()
    got = [answers.get(timeout=60) for _ in askers]
    for asker in askers:
        asker.join(timeout=60)
    assert (tmp_path / "builds.log").read_text() == "built\n"
    assert len(set(got)) == 1 and got[0][0] == "made"


def test_a_failed_build_is_made_again_from_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(SHARED_ENV, str(tmp_path))

    def failing(path: Path) -> None:
        path.write_text("half")
        (tmp_path / "thing-wal").write_text("stale")
        raise RuntimeError("the collect failed")

    with pytest.raises(RuntimeError):
        built_once("thing", failing)

    def clean(path: Path) -> bool:
        return not path.exists() and not (tmp_path / "thing-wal").exists()

    assert built_once("thing", clean) == (tmp_path / "thing", True)


def test_scenarios_differ_in_their_keys():
    assert Scenario().key == Scenario().key
    assert Scenario(seed=7).key != Scenario().key
    assert Scenario(rate_limit=10).key != Scenario().key
    assert Scenario(window_days=31).key != Scenario().key  # another collect, another build
