"""Markdown for a GitHub comment built from text we do not control (log lines, job, runner and
workflow names): it must not ping anyone, reference other issues, or break the comment.

Inline text is HTML-escaped and Markdown-escaped, so it renders as the literal characters; a log
line goes into a code block whose fence is longer than any backtick run in it, so nothing in the
line can close the block. ``@`` and ``#`` get a zero-width joiner after them in both places, and
so does the ``GH`` of ``GH-123``, so neither a mention nor an issue reference survives, even where
GitHub would look inside code.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

ZWJ = "\u200d"
# C0/C1 controls (except tab, turned into a space) and the bidi overrides that can hide text.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_WHITESPACE = re.compile(r"[\t\r\n]+")
# Characters with a meaning in GitHub Markdown inline text; a backslash makes each literal.
_MARKDOWN = re.compile(r"([\\`*_\[\]()!|~])")
_PINGS = re.compile(r"([@#])")
_GH_REFERENCE = re.compile(r"(gh)(?=-\d)", re.IGNORECASE)  # GitHub links GH-123 like #123
_BACKTICKS = re.compile(r"`+")
_URL_SAFE = "/:?=&#%-._~+,;"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, without invisible characters, cut to ``limit`` characters."""
    flat = _INVISIBLE.sub("", _WHITESPACE.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def unping(text: str) -> str:
    """``@name``, ``#123`` and ``GH-123`` that GitHub cannot turn into a mention or a
    cross-reference."""
    return _GH_REFERENCE.sub(r"\1" + ZWJ, _PINGS.sub(r"\1" + ZWJ, text))


def md_text(text: object, limit: int = 200) -> str:
    """Foreign text as inline Markdown that renders literally: no HTML, no emphasis, no links,
    no table cell break, no mention."""
    flat = one_line(str(text), limit)
    escaped = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return unping(_MARKDOWN.sub(r"\\\1", escaped))


def code_block(text: str, limit: int = 300, indent: str = "") -> str:
    """A one-line fenced code block of foreign text; the fence outlasts any backtick run in it."""
    line = unping(one_line(text, limit))
    longest = max((len(run) for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{indent}{fence}text\n{indent}{line}\n{indent}{fence}"


def safe_url(url: object) -> str | None:
    """An http(s) URL percent-encoded so it cannot end a Markdown link early; None otherwise."""
    text = str(url or "")
    if urlsplit(text).scheme not in ("http", "https"):
        return None
    return quote(text, safe=_URL_SAFE)


def link(label: str, url: object) -> str:
    """``[label](url)`` with ``label`` escaped; the bare label when the URL is not http(s)."""
    target = safe_url(url)
    return f"[{md_text(label)}]({target})" if target else md_text(label)


def details(summary: str, body: str) -> str:
    """A folded section; ``summary`` is our own text (escape foreign parts before)."""
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"
