"""Code fences in rendered Markdown, for the tests that check what a comment shows."""

from __future__ import annotations

import re

FENCE = re.compile(r"^\s*(`{3,})")


def split_fences(markdown: str) -> tuple[list[str], list[str], bool]:
    """(lines outside code blocks, lines inside them, every block closed)."""
    outside, inside, fence = [], [], None
    for line in markdown.splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match[1]
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is not None:
            inside.append(line)
        else:
            outside.append(line)
    return outside, inside, fence is None
