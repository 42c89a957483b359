"""The preflight of a cluster's Schema Registry: whether it answers with kmigrate's
credentials, its global mode, and how many subjects it holds. Only reads."""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterError
from kmigrate.schema_registry.client import SchemaRegistry


@dataclass(frozen=True)
class RegistryReport:
    cluster: str
    url: str
    failure: str | None = None  # why it could not be read; then nothing else is known
    mode: str | None = None  # the global mode (IMPORT or READONLY refuse producers' writes)
    compatibility: str | None = None
    subjects: int = 0

    @property
    def ok(self) -> bool:
        return self.failure is None


def check_registry(cluster: ClusterConfig) -> RegistryReport | None:
    """The cluster's registry as kmigrate sees it (None: the cluster names none)."""
    if cluster.schema_registry is None:
        return None
    registry = SchemaRegistry(cluster)
    try:
        return RegistryReport(
            cluster.name,
            registry.url,
            mode=registry.mode(),
            compatibility=registry.compatibility(),
            subjects=len(registry.subjects()),
        )
    except ClusterError as exc:
        return RegistryReport(cluster.name, registry.url, failure=exc.message)
