"""The runnable-blocks convention (tests/docs_blocks.py): which commands a page marks,
on which lines, with which exit codes and promised output; and every way a marker can
be misused is an error naming its line, so no block is silently dropped."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.docs_blocks import BlockError, Command, Expected, parse

PAGE = """\
# A page

Some prose.

<!-- docs-test: run -->
```sh
# a comment line is skipped
kmigrate clusters list          # a trailing comment is the shell's

kmigrate topics describe nope \\
  --cluster source              # exits 4
```

<!-- docs-test: output -->
```text
source ... 127.0.0.1
  not-found
```

```sh
kmigrate not-marked
```
"""


def test_a_marked_block_gives_its_commands_lines_exit_codes_and_output() -> None:
    [block] = parse(PAGE)
    assert block.line == 5
    assert block.commands == (
        Command(8, "kmigrate clusters list          # a trailing comment is the shell's"),
        Command(
            10, "kmigrate topics describe nope \\\n  --cluster source              # exits 4", 4
        ),
    )
    assert block.expected == (Expected(16, "source ... 127.0.0.1"), Expected(17, "not-found"))


def test_a_page_without_markers_has_no_blocks() -> None:
    assert parse("# Title\n\n```sh\nkmigrate --help\n```\n") == []


def test_blocks_inside_an_admonition_lose_their_indentation() -> None:
    page = textwrap.dedent("""\
        !!! note
            <!-- docs-test: run -->
            ```bash
            kmigrate sandbox status
            ```
        """)
    [block] = parse(page)
    assert block.commands == (Command(4, "kmigrate sandbox status"),)


@pytest.mark.parametrize(
    ("page", "line", "says"),
    [
        ("<!-- docs-test: run -->\n```python\nprint()\n```\n", 1, "```sh block"),
        ("<!-- docs-test: run -->\n\n```sh\nls\n```\n", 1, "```sh block"),
        ("x\n<!-- docs-test: runn -->\n```sh\nls\n```\n", 2, "unknown marker"),
        ("<!-- docs-test: run -->\n```sh\nls\n", 1, "never closed"),
        ("<!-- docs-test: run -->\n```sh\nls \\\n```\n", 3, "continuation"),
        ("<!-- docs-test: output -->\n```text\nx\n```\n", 1, "right after a run block"),
        (
            "<!-- docs-test: run -->\n```sh\nls\n```\nprose\n<!-- docs-test: output -->\n"
            "```text\nx\n```\n",
            6,
            "right after a run block",
        ),
        (
            "<!-- docs-test: run -->\n```sh\nls\n```\n<!-- docs-test: output -->\n```text\nx\n```\n"
            "<!-- docs-test: output -->\n```text\ny\n```\n",
            9,
            "right after a run block",
        ),
        ("<!-- docs-test: run -->\n```sh\nls\n```\n<!-- docs-test: output -->\n```sh\n```\n", 5,
         "```text block"),
    ],
)  # fmt: skip
def test_a_misused_marker_is_an_error_at_its_line(page: str, line: int, says: str) -> None:
    with pytest.raises(BlockError, match=says) as raised:
        parse(page)
    assert raised.value.line == line


def test_dots_match_anything_on_one_line_and_spaces_any_spaces() -> None:
    output = "NAME      PARTITIONS\ndocs-orders   3\nwarning: x\n"
    assert Expected(1, "docs-orders 3").found_in(output)
    assert Expected(1, "NAME ... PARTITIONS").found_in(output)
    assert Expected(1, "orders").found_in(output)
    assert not Expected(1, "NAME ... 3").found_in(output)  # not across lines
    assert not Expected(1, "docs.orders").found_in(output)  # a dot is a dot
    assert not Expected(1, "docs-orders 4").found_in(output)


SIMPLE_COMMAND = st.text(
    alphabet=st.characters(
        codec="ascii", categories=["L", "N", "P", "Zs"], exclude_characters="\\`#"
    ),
    min_size=1,
).filter(lambda text: text.strip())


@given(st.lists(st.tuples(SIMPLE_COMMAND, st.integers(0, 255)), min_size=1, max_size=8))
def test_every_command_written_is_parsed_back_with_its_line(
    written: list[tuple[str, int]],
) -> None:
    lines = [f"{text}  # exits {code}" if code else text for text, code in written]
    page = "Intro\n\n<!-- docs-test: run -->\n```sh\n" + "\n".join(lines) + "\n```\n"
    [block] = parse(page)
    assert [(c.line, c.text, c.exits) for c in block.commands] == [
        (5 + i, line.strip(), code)
        for i, (line, (_, code)) in enumerate(zip(lines, written, strict=True))
    ]


@given(st.text(alphabet=st.characters(exclude_characters="\n\r"), min_size=1), st.text(), st.text())
def test_a_line_is_found_in_any_output_that_holds_it(line: str, before: str, after: str) -> None:
    if line.strip():
        assert Expected(1, line).found_in(before + "\n" + line + after)
