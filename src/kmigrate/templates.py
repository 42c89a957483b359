"""Operators' command templates (real hosts): checked before anything runs (known
placeholders only), run by the shell with shell-quoted values, one clear line when a
command fails or hangs."""

from __future__ import annotations

import shlex
import string
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kmigrate.errors import CommandFailedError, ConfigError

# Per template (an attribute of the operator's templates): its option and placeholders.
Placeholders = Mapping[str, tuple[str, set[str]]]


def check(option: str, template: str | None, known: set[str], needed_by: str) -> None:
    if not template:
        raise ConfigError(f"{needed_by} on real hosts needs {option} as well")
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc} (write a literal brace as {{{{ or }}}})") from None
    unknown = sorted(fields - known)
    if unknown:
        raise ConfigError(
            f"{option}: unknown placeholder {{{unknown[0]}}}; it may use "
            + ", ".join(f"{{{k}}}" for k in sorted(known))
        )


def check_all(placeholders: Placeholders, given: object, needed_by: str) -> None:
    """Every template of ``given`` (the attributes ``placeholders`` names) is there and
    uses known placeholders only."""
    for attribute, (option, known) in placeholders.items():
        check(option, getattr(given, attribute), known, needed_by)


@dataclass(frozen=True)
class Runner:
    """Runs an operator's templates (``given``), each by its attribute name; ``again``
    is the command to resume with after one fails."""

    placeholders: Placeholders
    given: object
    report: Callable[[str], None]
    timeout_s: float
    again: str

    def __call__(self, which: str, what: str, **values: object) -> None:
        run(
            self.placeholders[which][0],
            getattr(self.given, which),
            what,
            values,
            timeout_s=self.timeout_s,
            report=self.report,
            again=self.again,
        )


def run(
    option: str,
    template: str,
    what: str,
    values: dict[str, object],
    *,
    timeout_s: float,
    report: Callable[[str], None],
    again: str,
) -> None:
    """Run ``template`` filled with ``values``; ``again`` is the command to resume with."""
    command = template.format(**{k: shlex.quote(str(v)) for k, v in values.items()})
    report(f"running {option} to {what}")
    try:
        done = subprocess.run(
            command, shell=True, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise CommandFailedError(
            f"{option} to {what} ran longer than {timeout_s:g}s; check the host, then run "
            f"{again} again"
        ) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise CommandFailedError(
            f"{option} to {what} exited {done.returncode}"
            + (f": {said[-1][:300]}" if said else "")
            + f"; fix it, then run {again} again"
        )
