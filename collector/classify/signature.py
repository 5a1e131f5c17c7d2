"""Stable failure signatures: mask what varies between runs, then hash (LUCI/Treeherder style).

Two failures with the same root cause differ in numbers, paths, hosts, ranks and durations; the
mask keeps the words and drops those, so they share a signature.
"""

from __future__ import annotations

import hashlib
import re

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"^\(\w+ pid=[^)]*\)\s*", ""),  # Ray worker prefix: "(TaskRunner pid=12, ip=...)"
        # GitHub's own messages name the runner, which varies with every job: "The job running
        # on runner NAME has exceeded the maximum execution time of N minutes." and "The
        # self-hosted runner: NAME lost communication with the server." (actions/runner#2624).
        (r"(\bon runner ).+?( has exceeded)", r"\1<runner>\2"),
        (r"(\brunner: ).+?( lost communication)", r"\1<runner>\2"),
        (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
        (r"(https?://[^/\s'\"]+)[^\s'\")]*", r"\1/<path>"),
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<ip>"),
        (r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?", "<path>"),
        (r"\b0x[0-9a-fA-F]+\b", "<hex>"),
        (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b", "<hex>"),
        (r"\d+(?:\.\d+)?\s*(?:[KMGT]i?B|bytes)\b", "<size>"),
        (r"\d+(?:\.\d+)?", "<n>"),
        (r"\s+", " "),
    )
)


def normalise(line: str) -> str:
    """The line with run-specific details masked: `<n>`, `<path>`, `<ip>`, `<hex>`, `<uuid>`,
    and the runner's name in GitHub's messages, `<runner>`."""
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    return line.strip()


def signature(rule: str, line: str | None) -> str:
    """12 hex chars of sha1 over the rule name and the normalised line."""
    text = f"{rule}\n{normalise(line) if line else ''}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
