"""What a front end works with: the settings, and the outside systems they name, opened
on demand.

The CLI parses a command, calls a use case and renders its answer; it opens no Kafka
client, metadata store or Schema Registry itself (a contract in pyproject.toml). It
takes them from a :class:`Workspace`, which opens each from the settings the first time
it is asked (a command that needs no store never creates one), and hands them to the
use cases. ``kmigrate serve`` still opens its own (serve/app.py, serve/api.py): moving
it here is the next step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

from kmigrate.config import ClusterConfig, EnsembleConfig, Settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.model.links import Link
from kmigrate.schema_registry.client import SchemaRegistry
from kmigrate.store import Store, store_for
from kmigrate.store.links import list_links, require_link
from kmigrate.zookeeper.ensemble import resolve_ensemble


class Workspace:
    """The settings of one command (or one ``serve`` process) and what they open."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def store(self) -> Store:
        """The metadata store the settings name (created on first use)."""
        return store_for(self.settings)

    def cluster(self, name: str) -> ClusterConfig:
        return self.settings.cluster(name)

    def link(self, name: str) -> Link:
        """A stored link, or one line naming the links there are."""
        return require_link(self.store, name)

    def links(self) -> list[Link]:
        return list_links(self.store)

    def admin(self, cluster: str | ClusterConfig) -> ClusterAdmin:
        """An admin client of a configured cluster (a context manager: closed on exit)."""
        return ClusterAdmin(self._config(cluster))

    @contextmanager
    def admins(
        self, source: str | ClusterConfig, target: str | ClusterConfig
    ) -> Iterator[tuple[ClusterAdmin, ClusterAdmin]]:
        """Admin clients of a pair of clusters, both configs checked before either is
        contacted, closed together."""
        source_cfg, target_cfg = self._config(source), self._config(target)
        with ClusterAdmin(source_cfg) as s, ClusterAdmin(target_cfg) as t:
            yield s, t

    def reassignments(self, cluster: str | ClusterConfig) -> Reassignments:
        """KIP-455 reassignments of a cluster (a context manager: closed on exit)."""
        return Reassignments(self._config(cluster))

    def registry(self, cluster: str | ClusterConfig) -> SchemaRegistry:
        """The Schema Registry a configured cluster names (refused if it names none)."""
        return SchemaRegistry(self._config(cluster))

    def ensemble(self, value: str) -> EnsembleConfig:
        """A ZooKeeper ensemble by its configured name, or a literal ``host:port,...``."""
        return resolve_ensemble(self.settings, value)

    def _config(self, cluster: str | ClusterConfig) -> ClusterConfig:
        return self.settings.cluster(cluster) if isinstance(cluster, str) else cluster


# What `Workspace.admin` opens, for a front end's annotations where it hands the client on
# to a use case (it calls none of its methods itself).
Admin = ClusterAdmin
