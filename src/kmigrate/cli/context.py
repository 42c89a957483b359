"""What every command may need; settings are loaded only when a command asks for them.

The settings model and the workspace (which imports every adapter: the Kafka, ZooKeeper
and SQL clients) are imported on first use too: every command module imports this one,
and `kmigrate GROUP --help` should not pay a second of imports it never uses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kmigrate.errors import ConfigError

if TYPE_CHECKING:
    from kmigrate.config import ClusterConfig, Settings
    from kmigrate.workspace import Workspace


class AppContext:
    def __init__(self, config: str | None) -> None:
        self.config_path = config
        self._settings: Settings | None = None
        self._workspace: Workspace | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from kmigrate.config import load_settings

            self._settings = load_settings(self.config_path)
        return self._settings

    @property
    def workspace(self) -> Workspace:
        """The clusters, store, registries and Spark the settings name, opened on demand."""
        if self._workspace is None:
            from kmigrate.workspace import Workspace

            self._workspace = Workspace(self.settings)
        return self._workspace

    def cluster(self, name: str) -> ClusterConfig:
        return self.settings.cluster(name)

    def pair(self, source: str, target: str) -> tuple[ClusterConfig, ClusterConfig]:
        """Two configured clusters a command copies between; one named twice is refused."""
        if source == target:
            raise ConfigError(f"--source and --target are both '{source}'; give two clusters")
        return self.cluster(source), self.cluster(target)


pass_app = click.make_pass_decorator(AppContext)
F = TypeVar("F", bound=Callable[..., Any])


def plan_output_options(command: F) -> F:
    """`-o/--output FILE` (required) and `--force`: where a `plan` command writes."""
    command = click.option("--force", is_flag=True, help="Overwrite an existing plan file.")(
        command
    )
    return click.option(
        "-o", "--output", type=click.Path(path_type=Path), required=True, help="Plan file to write."
    )(command)


def int_list(value: str, option: str) -> list[int]:
    """``"4,5"`` -> [4, 5] (sorted, no repeats), or one line naming the option."""
    try:
        return sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise ConfigError(f"{option} {value}: give numbers like 0,1,2") from None
