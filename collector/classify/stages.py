"""The stage a failed job stopped in (setup, install, environment check, test...), from the
name of its failed step, by the ordered table in stages.toml."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

STAGES_PATH = Path(__file__).with_name("stages.toml")


@cache
def load_stages(path: Path = STAGES_PATH) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(stage name, compiled pattern) in priority order; a bad pattern fails at load time."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return tuple((entry["name"], re.compile(entry["pattern"])) for entry in data["stage"])


def stage_of(step_names: Sequence[str], path: Path = STAGES_PATH) -> str | None:
    """The stage of the first stopped step that any stage names; None without a step (a job
    that never ran, a run without jobs) or when no stage matches."""
    for name in step_names:
        for stage, pattern in load_stages(path):
            if pattern.search(name):
                return stage
    return None
