"""The runnable blocks of the documentation: which shell commands a page marks to run,
and the output it promises. Pure: it reads Markdown text and runs nothing
(tests/integration/docs/test_docs_examples.py runs what it finds).

The convention, in a page::

    <!-- docs-test: run -->
    ```sh
    kmigrate topics list --cluster source      # a comment is fine
    kmigrate topics describe nope \\
      --cluster source                          # exits 4
    ```
    <!-- docs-test: output -->
    ```text
    orders ... 3
    ```

A run block is the ``sh`` (or ``bash``, ``shell``) fence right after its marker: each
line is one command (a line ending in ``\\`` continues on the next), run in order in
one folder, each in a fresh shell (so ``cd`` and ``export`` do not carry over); lines
that are only a comment and blank lines are skipped. A command must exit 0, or N when
its line ends with ``# exits N``. An output block is the ``text`` fence right after its
marker, which must come right after a run block (blank lines between are fine): each
non-empty line must match one line of that block's output, where ``...`` matches
anything and a run of spaces matches any run of spaces. A marker followed by anything
else is an error, so a typo never silently drops a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = re.compile(r"^<!--\s*docs-test:\s*(\S+)\s*-->$")
RUN_FENCES = ("sh", "bash", "shell")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")


class BlockError(ValueError):
    """A marked block that does not follow the convention; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Command:
    """One command of a run block: where it starts, what the shell runs, the exit code
    it must end with."""

    line: int
    text: str
    exits: int = 0


@dataclass(frozen=True)
class Expected:
    """One promised line of output: where it is written, and the text with ``...``."""

    line: int
    text: str

    def found_in(self, output: str) -> bool:
        """Whether some line of ``output`` matches (``...`` is anything, a run of spaces
        any run of spaces; the match may be anywhere in the line)."""
        return pattern(self.text).search(output) is not None


@dataclass(frozen=True)
class RunBlock:
    """A run block: its marker's line, its closing fence's line, its commands, and the
    output promised after it."""

    line: int
    end: int
    commands: tuple[Command, ...]
    expected: tuple[Expected, ...] = ()


@dataclass(frozen=True)
class Fence:
    """A marked fenced block: the marker's kind and line, the content lines (numbered
    from 1, the fence's indentation removed) and the closing fence's line."""

    kind: str
    line: int
    content: tuple[tuple[int, str], ...]
    end: int


def pattern(text: str) -> re.Pattern[str]:
    """The regex of an expected line: literal but for ``...`` (anything on the line) and
    runs of spaces (any run of whitespace within the line)."""
    spaces = r"[^\S\n]+"  # any whitespace but a line break
    parts = [spaces.join(map(re.escape, piece.split())) for piece in text.strip().split("...")]
    return re.compile(".*".join(parts), re.MULTILINE)


def parse(markdown: str) -> list[RunBlock]:
    """Every run block of a page, in order, each with the output block that follows it;
    a page without markers has none. Raises BlockError at the first marker that breaks
    the convention."""
    lines = markdown.splitlines()
    blocks: list[RunBlock] = []
    index = 0
    while index < len(lines):
        if not MARKER.match(lines[index].strip()):
            index += 1
            continue
        fence = fenced(lines, index)
        if fence.kind == "run":
            blocks.append(RunBlock(fence.line, fence.end, tuple(commands(fence.content))))
        else:
            blocks[-1:] = [_with_output(blocks[-1] if blocks else None, fence, lines)]
        index = fence.end
    return blocks


def fenced(lines: list[str], index: int) -> Fence:
    """The block marked by the marker at ``lines[index]``: its fence must open on the
    next line with an info string the marker's kind takes, and must close."""
    kind = MARKER.match(lines[index].strip()).group(1)  # type: ignore[union-attr]
    if kind not in ("run", "output"):
        raise BlockError(index + 1, f"unknown marker 'docs-test: {kind}' (run or output)")
    want = RUN_FENCES if kind == "run" else ("text",)
    opening = re.match(
        r"^(\s*)(`{3,})\s*(\S*)\s*$", lines[index + 1] if index + 1 < len(lines) else ""
    )
    if not opening or opening.group(3) not in want:
        raise BlockError(index + 1, f"'docs-test: {kind}' must be followed by a ```{want[0]} block")
    indent, ticks = len(opening.group(1)), opening.group(2)
    content = []
    for number in range(index + 3, len(lines) + 1):
        text = lines[number - 1]
        if text.strip().startswith(ticks) and not text.strip().strip("`"):
            return Fence(kind, index + 1, tuple(content), number)
        content.append((number, text[indent:]))
    raise BlockError(index + 1, f"the block of 'docs-test: {kind}' is never closed")


def commands(content: tuple[tuple[int, str], ...]) -> list[Command]:
    """The commands of a run block's content lines: continuations joined, blank and
    comment-only lines skipped."""
    found: list[Command] = []
    pending: list[tuple[int, str]] = []
    for number, text in content:
        pending.append((number, text))
        if text.rstrip().endswith("\\"):
            continue
        joined = "\n".join(t for _, t in pending).strip()
        if joined and not joined.startswith("#"):
            exits = EXITS.search(joined.splitlines()[-1])
            found.append(Command(pending[0][0], joined, int(exits.group(1)) if exits else 0))
        pending = []
    if pending:
        raise BlockError(pending[0][0], "the last command ends with a '\\' continuation")
    return found


def _with_output(block: RunBlock | None, fence: Fence, lines: list[str]) -> RunBlock:
    """``block`` with the output that ``fence`` promises; only blank lines may separate
    them, and a run block takes one output block."""
    between = lines[block.end : fence.line - 1] if block else ["(no run block)"]
    if block is None or block.expected or any(line.strip() for line in between):
        raise BlockError(fence.line, "'docs-test: output' must come right after a run block")
    expected = tuple(Expected(n, t.strip()) for n, t in fence.content if t.strip())
    return RunBlock(block.line, block.end, block.commands, expected)
