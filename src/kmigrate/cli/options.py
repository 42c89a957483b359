"""The CLI's one vocabulary: each concept has one flag, declared once here.

    concept                         flag                     value
    one configured cluster          --cluster NAME           a name from clusters.yaml
    a pair of clusters              --source / --target      names from clusters.yaml
    a set of topics                 --topics REGEX           Python regex, full match
    one topic                       --topic NAME
    a set of consumer groups        --groups REGEX           Python regex, full match
    one consumer group              --group NAME
    a position in partitions        --from POSITION          earliest | latest | <ms> | <ISO time>
    how long to wait                --timeout DURATION       90s, 15m, 1h30m
    how often to do something       --interval DURATION
    waiting for the end             --wait                   a flag; bounded by --timeout
    output for scripts              --json                   errors too: one JSON object on stderr
    how many rows to show           --limit N                0 shows all; --json has all
    a destructive step              --dry-run / --yes        see `confirm`

The object a command is named after is its argument (`topics describe TOPIC`,
`groups describe GROUP`, `clusters describe CLUSTER`, `migrate start PLAN`); everything
else is a flag. An old spelling stays accepted for one release through `renamed`, which
prints one deprecation line on stderr.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from kmigrate.durations import parse_duration
from kmigrate.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON for scripts (errors too, on stderr)."
)


def limit_option(default: int, rows: str) -> Callable[[F], F]:
    """`--limit N`: show at most N ``rows`` (0: all of them); --json always has all."""
    return click.option(
        "--limit",
        "limit",
        type=click.IntRange(0),
        default=default,
        show_default=True,
        metavar="N",
        help=f"Show at most N {rows} (0: all); --json lists them all.",
    )


# --- durations ---------------------------------------------------------------------------


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """A duration: 90, 90s, 15m, 1h30m (seconds when no unit is given); ``minimum`` and
    ``maximum`` in seconds bound it."""

    name = "duration"

    def __init__(self, minimum: float | None = None, maximum: float | None = None) -> None:
        self.minimum, self.maximum = minimum, maximum

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        seconds = float(value) if isinstance(value, int | float) else parse_duration(str(value))
        if seconds is None or seconds <= 0:
            self.fail(f"'{value}' is not a duration; write e.g. 90s, 15m or 1h30m", param, ctx)
        if self.minimum is not None and seconds < self.minimum:
            self.fail(f"'{value}' is shorter than {_seconds(self.minimum)}", param, ctx)
        if self.maximum is not None and seconds > self.maximum:
            self.fail(f"'{value}' is longer than {_seconds(self.maximum)}", param, ctx)
        return seconds


def _seconds(value: float) -> str:
    return f"{value:g}s"


def duration_option(
    *names: str, default: str | None, help: str, minimum: float | None = None, **kwargs: Any
) -> Callable[[F], F]:
    """An option whose value is a DURATION (90s, 15m, 1h)."""
    return click.option(
        *names,
        type=Duration(minimum=minimum),
        default=default,
        show_default=default is not None,
        metavar="DURATION",
        help=help,
        **kwargs,
    )


def timeout_option(default: str | None, help: str = "How long to wait.") -> Callable[[F], F]:
    return duration_option("--timeout", "timeout", default=default, help=help)


def interval_option(default: str, help: str) -> Callable[[F], F]:
    return duration_option("--interval", "interval", default=default, help=help)


def max_unavailable_option(default: str) -> Callable[[F], F]:
    """`--max-unavailable`: how long a long-running command waits out one cluster outage."""
    return duration_option(
        "--max-unavailable",
        "max_unavailable",
        default=default,
        help="How long to wait out a cluster that stops answering (broker restart, leader "
        "election) before stopping; e.g. 90s, 15m, 1h.",
    )


# --- clusters, topics, groups ------------------------------------------------------------


def cluster_option(
    help: str = "Cluster name from the configuration.", required: bool = True
) -> Callable[[F], F]:
    return click.option("--cluster", "cluster_name", required=required, metavar="NAME", help=help)


def topics_option(
    help: str = "Topics: a regex that must match the whole name.",
    required: bool = False,
    default: str | None = None,
) -> Callable[[F], F]:
    return regex_option("--topics", help, required, default)


def groups_option(
    help: str = "Consumer groups: a regex that must match the whole id.",
    required: bool = False,
    default: str | None = None,
) -> Callable[[F], F]:
    return regex_option("--groups", help, required, default)


def regex_option(flag: str, help: str, required: bool, default: str | None) -> Callable[[F], F]:
    """``flag REGEX``, checked to compile before anything runs."""
    extra: dict[str, Any] = {} if default is None else {"default": default, "show_default": True}
    return click.option(
        flag,
        flag.lstrip("-"),
        required=required,
        metavar="REGEX",
        callback=_check_regex,
        help=help,
        **extra,
    )


def _check_regex(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as exc:
        raise click.BadParameter(f"'{value}' is not a regex: {exc}", ctx, param) from None
    return value


def names_regex(names: Iterable[str]) -> str:
    """A regex that matches exactly ``names`` (for old commands that took a list)."""
    return "|".join(re.escape(n) for n in names)


# Kafka's rule for topic names (kafka.common.internals.Topic): 1-249 of [a-zA-Z0-9._-],
# not "." or "..". Group ids may be any non-empty string.
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic_name(name: str, what: str = "topic") -> str:
    """``name`` if Kafka accepts it as a topic name, or one line saying why not."""
    if name in (".", "..") or not _TOPIC_NAME.fullmatch(name):
        shown = name if len(name) <= 60 else name[:57] + "..."
        raise ConfigError(
            f"{what} '{shown}' is not a valid Kafka topic name: use 1-249 characters "
            "from a-z A-Z 0-9 . _ - (not '.' or '..')"
        )
    return name


# --- destructive steps -------------------------------------------------------------------


def confirm_options(command: F) -> F:
    """`--dry-run` and `--yes` (old spelling `--apply`) for a command that deletes or
    undoes something. Pair with `confirm`."""
    command = click.option(
        "--apply", "apply_", is_flag=True, hidden=True, help="Old spelling of --yes."
    )(command)
    command = click.option(
        "--yes", "yes", is_flag=True, help="Do it without asking (for scripts)."
    )(command)
    command = click.option(
        "--dry-run", "dry_run", is_flag=True, help="Show what would change; change nothing."
    )(command)

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.pop("apply_"):
            deprecated("--apply", "--yes")
            kwargs["yes"] = True
        return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def confirm(action: str, *, dry_run: bool, yes: bool) -> bool:
    """Whether to go ahead with ``action`` (already shown to the user as what would
    change): ``--yes`` goes, ``--dry-run`` stops, a terminal is asked, anything else (a
    script without ``--yes``) stops with one line saying how to go ahead. Stopping changes
    nothing and exits 0."""
    if dry_run:
        _note(f"dry run: nothing changed; rerun with --yes to {action}")
        return False
    if yes:
        return True
    if sys.stdin.isatty() and sys.stderr.isatty():
        return click.confirm(f"{action[0].upper()}{action[1:]}?", default=False, err=True)
    _note(f"nothing changed: rerun with --yes to {action}")
    return False


def _note(text: str) -> None:
    click.echo(text, err=True)


# --- renamed flags -------------------------------------------------------------------------


def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints (on stderr, so --json output stays clean)."""
    click.echo(
        f"warning: {old} is deprecated and will be removed in the next release; use {new}",
        err=True,
    )


def renamed(old: str, new: str, dest: str, *, is_flag: bool = False) -> Callable[[F], F]:
    """Keep the old spelling ``old`` of the option ``new`` (stored in ``dest``) working:
    hidden, it fills ``dest`` when ``new`` was not given, with a deprecation line. The
    command declares ``new`` with ``required=False`` and calls `require` if needed."""
    hidden_dest = f"_old_{dest}"

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden_dest)
            if value not in (None, False, ()):
                deprecated(old, new)
                if kwargs.get(dest) in (None, False, ()):
                    kwargs[dest] = value
            return command(*args, **kwargs)

        return click.option(
            old, hidden_dest, is_flag=is_flag, hidden=True, default=None if not is_flag else False
        )(wrapper)  # type: ignore[return-value]

    return decorate


def require(value: Any, flag: str) -> Any:
    """``value``, or click's usage error for a missing ``flag`` (exit 2)."""
    if value in (None, (), ""):
        raise click.UsageError(f"Missing option '{flag}'.")
    return value
