"""Output: Rich tables for people, JSON for scripts, one-line errors on stderr."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kmigrate.jsonable import to_jsonable

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def fresh() -> None:
    """New consoles for one invocation: a console keeps the COLUMNS it was made with,
    and an in-process caller (the API, tests) runs many invocations in one process."""
    global out, err  # noqa: PLW0603 (the module's consoles are what every command prints to)
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, default=str) + "\n")


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    if title:
        out.print(Text(title, style="bold"), soft_wrap=True)
    t = Table(header_style="bold")
    for column in columns:
        t.add_column(column, overflow="fold")
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    out.print(t)


def error(message: str, detail: str | None = None) -> None:
    err.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    if detail:
        err.print(detail, markup=False, soft_wrap=True)


def json_error(message: str, code: str, exit_code: int) -> None:
    """An error for scripts: one JSON object on one line of stderr."""
    payload = {"error": message, "code": code, "exit": exit_code}
    sys.stderr.write(json.dumps(payload) + "\n")


def progress(message: str) -> None:
    err.print(Text.assemble(("> ", "dim"), message), soft_wrap=True)


class StatusLine:
    """One line that shows what a long command waits for right now: redrawn in place on a
    terminal; in a log (not a terminal), written at most every ``every_s`` seconds so a
    long wait still shows it is alive."""

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s = every_s
        self._status: Any = None
        self._key = ""
        self._since = 0.0

    def __enter__(self) -> StatusLine:
        if err.is_terminal:
            self._status = err.status("")
            self._status.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._status is not None:
            self._status.stop()

    def update(self, text: str) -> None:
        """``text`` is "what (detail)"; the detail (elapsed time) may change freely."""
        if self._status is not None:
            self._status.update(text)
            return
        key, now = text.split(" (", maxsplit=1)[0], time.monotonic()
        if key != self._key:
            self._key, self._since = key, now
        elif now - self._since >= self.every_s:
            progress(text)
            self._since = now


@contextmanager
def wait_bar(quiet: bool) -> Iterator[Any]:
    """A progress bar of the records the mirror still has to copy (nothing if ``quiet``)."""
    if quiet:
        yield None
        return
    with Progress(
        TextColumn("waiting for the mirror"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("records"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("wait", total=None)

        def update(to_go: int, total: int) -> None:
            progress.update(task, total=max(total, 1), completed=max(total - to_go, 0))

        yield update
