"""Turn one raw log line into the text a person would read, and say how strong its evidence is.

Only lines that a pattern matched go through here, so this can afford Python `re`. Real logs
reach us wrapped in the layers of every tool between the failing process and the page: GitHub's
timestamps and `##[error]` markers, ANSI colours (raw, or with the escape byte lost or printed
as `^[`), Ray's `(WorkerDict pid=...)` and torchrun's `[rank3]:` prefixes, docker compose and
Buildkite gutters, BuildKit step numbers, markdown quotes from an issue thread. They are peeled
off so that a line's log level and its message can be read.
"""

from __future__ import annotations

import re

_BOM = "\ufeff"
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")
# ANSI CSI/OSC sequences; also SGR colours whose ESC was lost or shown as caret notation (^[).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|(?:\^\[)?\[[0-9;]*[0-9]m")
_MARKER = re.compile(r"^##\[(?:group|endgroup|error|warning|notice|debug|command|section)\]")
# A workflow command the runner did not turn into `##[error]` (it must start the line, leading
# spaces aside; behind a Ray worker's or a container's prefix it stays as printed):
# `::error file=x.py,line=3,title=T::message` reads as its message.
_ERROR_COMMAND = re.compile(r"::error(?: [^:]*)?::")
# One layer of wrapping at the start of a line; applied until none is left.
_PREFIX = re.compile(
    r"""^(?:
      >[ \t]?                                          # markdown quote
    | \*\*                                             # markdown bold
    | \|[ \t]                                          # Buildkite gutter
    | [\w.-]+-\d+[ \t]+\|[ \t]?                        # docker compose: "server-1    | "
    | \((?:[A-Za-z_][\w.-]*(?:[ ][\w.=-]+)*[ ,][ ]?)?pid=\d+(?:,[ ]?ip=[\w.:-]+)?\)[ \t]*  # Ray
    | \[rank\d+\]:[ \t]*                               # torchrun's per-rank prefix
    | \#\d+[ ](?:\d+\.\d+[ ])?                         # BuildKit step "#54 1428.2 "
    | \d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]*(?:-[ ])?
    # [2025-06-23 15:37:01 TP1], [2025-01-01 10:00:00,123]
    | \[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[ ][A-Z]+\d*)?\][ \t]*
    | [A-Z][a-z]{2}[ ]+\d+[ ]\d\d:\d\d:\d\d[ ]+         # syslog "Jul 13 21:22:34 "
    | \[task[ ][^\]]*\][ \t]*                          # Taskcluster
    | \d+\t                                            # a numbered paste "1146<TAB>"
    )""",
    re.X,
)
MAX_LINE_CHARS = 2000


def strip_prefixes(text: str) -> str:
    """The line without its wrapping layers (see _PREFIX), however deeply nested."""
    while (found := _PREFIX.match(text)) and found.end():
        text = text[found.end() :]
    return text


def clean_line(raw: bytes) -> str:
    """Decode (invalid UTF-8 replaced), strip BOM, timestamp, ANSI codes, `##[...]` markers and
    an `::error::` command."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n").replace(_BOM, "")
    text = _TIMESTAMP.sub("", text, count=1)
    text = _ANSI.sub("", text)
    text = _MARKER.sub("", text, count=1)
    text = _ERROR_COMMAND.sub("", text, count=1)
    return text.strip()[:MAX_LINE_CHARS]


def text_starts(text: str, *patterns: re.Pattern[str] | None) -> list[int]:
    """Where each of `patterns` first matches in a cleaned line (len(text) where it does not).

    They are searched in the line without its prefixes, so that `^WARNING` finds the level of
    "(WorkerDict pid=7) WARNING ..." too; the offsets returned are in `text`.
    """
    bare = strip_prefixes(text)
    offset = len(text) - len(bare)
    found = [p.search(bare) if p is not None else None for p in patterns]
    return [offset + f.start() if f else len(text) for f in found]
