"""Turn one raw GitHub Actions log line into the text a person would read.

Only lines that a pattern matched go through here, so this can afford Python `re`.
"""

from __future__ import annotations

import re

_BOM = "\ufeff"
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_MARKER = re.compile(r"^##\[(?:group|endgroup|error|warning|notice|debug|command|section)\]")
MAX_LINE_CHARS = 2000


def clean_line(raw: bytes) -> str:
    """Decode (invalid UTF-8 replaced), strip BOM, timestamp, ANSI codes and `##[...]` markers."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n").replace(_BOM, "")
    text = _TIMESTAMP.sub("", text, count=1)
    text = _ANSI.sub("", text)
    text = _MARKER.sub("", text, count=1)
    return text.strip()[:MAX_LINE_CHARS]
