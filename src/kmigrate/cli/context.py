"""What every command may need; settings are loaded only when a command asks for them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from kmigrate.config import ClusterConfig, Settings, load_settings
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


@contextmanager
def cluster_admins(
    app: AppContext, source: str, target: str
) -> Iterator[tuple[ClusterAdmin, ClusterAdmin]]:
    """Admin clients for a pair of configured clusters, closed together."""
    with ClusterAdmin(app.cluster(source)) as s, ClusterAdmin(app.cluster(target)) as t:
        yield s, t


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
cluster_option = click.option(
    "--cluster",
    "cluster_name",
    required=True,
    metavar="NAME",
    help="Cluster name from the configuration.",
)
