"""How a command that compares (`verify`, `schemas copy | compare`, `quotas copy |
compare`) ends when what it compared differs: each difference on a line of its own,
then exit 1, the code the reference documents for "it differs"."""

from __future__ import annotations

from collections.abc import Iterable

import click

from kmigrate.cli import render

EXIT_DIFFERS = 1


def print_differences(found: Iterable[str], prefix: str = "") -> None:
    for line in found:
        render.out.print(f"{prefix}{line}")


def exit_if_differs(differs: object) -> None:
    """Exit 1 when ``differs`` is true (a non-empty list of differences, a failed check)."""
    if differs:
        raise click.exceptions.Exit(EXIT_DIFFERS)
