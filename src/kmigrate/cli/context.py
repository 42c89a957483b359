"""What every command may need; settings are loaded only when a command asks for them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from kmigrate.config import ClusterConfig, Settings, load_settings
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin


class AppContext:
    def __init__(self, config: str | None) -> None:
        self.config_path = config
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path)
        return self._settings

    def cluster(self, name: str) -> ClusterConfig:
        return self.settings.cluster(name)


pass_app = click.make_pass_decorator(AppContext)
F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def cluster_admins(
    app: AppContext, source: str, target: str
) -> Iterator[tuple[ClusterAdmin, ClusterAdmin]]:
    """Admin clients for a pair of configured clusters, closed together."""
    with ClusterAdmin(app.cluster(source)) as s, ClusterAdmin(app.cluster(target)) as t:
        yield s, t


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def plan_output_options(command: F) -> F:
    """`-o/--output FILE` (required) and `--force`: where a `plan` command writes."""
    command = click.option("--force", is_flag=True, help="Overwrite an existing plan file.")(
        command
    )
    return click.option(
        "-o", "--output", type=click.Path(path_type=Path), required=True, help="Plan file to write."
    )(command)


cluster_option = click.option(
    "--cluster",
    "cluster_name",
    required=True,
    metavar="NAME",
    help="Cluster name from the configuration.",
)


_DURATION = re.compile(r"\s*(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?\s*")


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """A duration: 90, 90s, 15m, 1h30m (seconds when no unit is given)."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        seconds = parse_duration(str(value))
        if seconds is None:
            self.fail(f"'{value}' is not a duration; write e.g. 90s, 15m or 1h30m", param, ctx)
        return seconds


def parse_duration(text: str) -> float | None:
    """Seconds in ``text`` (90, 90s, 15m, 1h30m, 1.5h), or None if it is not a duration."""
    found = _DURATION.fullmatch(text)
    if found is None or not any(found.groups()):
        return None
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


def max_unavailable_option(default: str) -> Callable[[F], F]:
    """`--max-unavailable`: how long a long-running command waits out one cluster outage."""
    return click.option(
        "--max-unavailable",
        "max_unavailable",
        type=Duration(),
        default=default,
        show_default=True,
        metavar="DURATION",
        help="How long to wait out a cluster that stops answering (broker restart, leader "
        "election) before stopping; e.g. 90s, 15m, 1h.",
    )


def int_list(value: str, option: str) -> list[int]:
    """``"4,5"`` -> [4, 5] (sorted, no repeats), or one line naming the option."""
    try:
        return sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise ConfigError(f"{option} {value}: give numbers like 0,1,2") from None
