"""The built-in project's analysis settings, for tests of pure analytics: the functions take
them whole (no default of their own), and a test changes one with ``analysis(window_days=7)``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from store.project import Analysis
from store.settings import load_config

VERL = load_config(env={}).project()
ANALYSIS = VERL.analysis


def analysis(**changes: Any) -> Analysis:
    return replace(ANALYSIS, **changes)
