"""Small Markdown builders shared by the reference generators: tables whose cells never
break the table, inline code that survives backticks, headings with a fixed anchor."""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import Callable, Sequence


def cell(text: str) -> str:
    """``text`` as one table cell: on one line, its pipes escaped outside code spans
    (inside one, the table already keeps them), shown as typed like `escaped`."""
    return _outside_code(" ".join(text.split()), lambda t: _as_typed(t).replace("|", "\\|"))


_CODE_SPAN = re.compile(r"(`+).+?\1")


def escaped(text: str) -> str:
    """``text`` with ``<``, ``>``, ``&``, ``*`` and ``_`` shown as typed, except inside code spans
    (which Markdown already shows as typed): an ``<id>`` placeholder must not vanish as
    an unknown HTML tag."""
    return _outside_code(text, _as_typed)


def _as_typed(text: str) -> str:
    # `*` and `_` too: "sasl.*, ssl.*" or "__consumer_offsets" must not turn emphasis.
    return re.sub(r"([*_])", r"\\\1", html.escape(text, quote=False))


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    parts, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts += [change(text[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join([*parts, change(text[last:])])


def code(text: str) -> str:
    """``text`` as inline code, fenced with enough backticks to hold the ones inside it."""
    fence = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; every row has the header's width (cells are already escaped)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"row {row!r} has {len(row)} cells, the header {len(header)}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def heading(level: int, text: str, anchor: str) -> str:
    """A heading with an explicit anchor (``#anchor``), stable whatever the text says."""
    return f"{'#' * level} {text} {{#{anchor}}}"


def prose(text: str | None) -> str:
    """A docstring or help text as Markdown paragraphs: indentation removed, ``<`` shown
    as typed; click's ``\\b`` paragraphs (kept line by line) become text blocks."""
    if not text:
        return ""
    paragraphs = inspect.cleandoc(text.split("\f", 1)[0]).split("\n\n")
    return "\n\n".join(_paragraph(p) for p in paragraphs if p.strip())


def _paragraph(paragraph: str) -> str:
    if paragraph.startswith("\b"):
        return "```text\n" + paragraph.removeprefix("\b").strip("\n") + "\n```"
    return escaped(" ".join(paragraph.split()))
