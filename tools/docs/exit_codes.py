"""The exit codes' reference: the table `kmigrate --help` prints (one source, in
kmigrate.cli.main), then every error kind (the ``code`` of a `--json` error) with the
exit code it ends with, from kmigrate's error tree."""

from __future__ import annotations

import inspect
import re

from tools.docs.markdown import cell, code, table

_ROW = re.compile(r"^\s*(\d+)\s+(.+)$")


def exit_codes(epilog: str) -> list[tuple[int, str]]:
    """The (exit code, meaning) rows of the `--help` epilog's table: every line that
    starts with a number, in order."""
    return [(int(m[1]), m[2].strip()) for m in map(_ROW.match, epilog.splitlines()) if m]


def error_classes() -> list[type]:
    """Every error kind kmigrate reports (the root excluded), parents before children,
    in the order the error tree declares them."""
    from kmigrate.errors import KMigrateError

    def below(parent: type) -> list[type]:
        found = []
        for child in parent.__subclasses__():
            found += [child, *below(child)]
        return found

    return below(KMigrateError)


def render(epilog: str, errors: list[type]) -> str:
    """The page's generated part: the exit-code table, then the error kinds by exit."""
    codes = table(
        ["Exit", "Meaning"], [[code(str(n)), cell(text)] for n, text in exit_codes(epilog)]
    )
    rows = [
        [code(str(e.exit_code)), code(e.code), cell(_first_line(e))]
        for e in sorted(errors, key=lambda e: e.exit_code)
    ]
    kinds = table(["Exit", "Error kind", "When"], rows)
    return f"{codes}\n\n## Error kinds {{#error-kinds}}\n\n{_KINDS_INTRO}\n\n{kinds}\n"


_KINDS_INTRO = (
    "With `--json`, an error is one JSON object on stderr, and its `code` names the kind "
    "of error; each kind always ends with the same exit code. The REST API answers a "
    "refusal with the same kind (see [REST API](api.md#refusals))."
)


def _first_line(error: type) -> str:
    """The first paragraph of an error class's own docstring, or nothing."""
    doc = error.__dict__.get("__doc__")
    return inspect.cleandoc(doc).split("\n\n")[0] if doc else ""
