"""What the ZooKeeper move reads from the world, as values the planner takes (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.ensemble_move.members import Member


@dataclass(frozen=True)
class EnsembleView:
    """One ensemble as it answered just now."""

    name: str  # from clusters.yaml, or the connect string itself
    connect: str
    members: tuple[Member, ...]  # from /zookeeper/config (empty: no dynamic config)
    config_version: str | None
    server_version: str | None  # e.g. "3.8.4"
    modes: dict[int, str | None]  # per member id: leader / follower / observer / None
    root_children: tuple[str, ...]  # "/" (besides nothing: "zookeeper" is always there)

    @property
    def ids(self) -> list[int]:
        return [m.node_id for m in self.members]

    @property
    def user_paths(self) -> list[str]:
        """Top-level znodes other than ZooKeeper's own."""
        return sorted(c for c in self.root_children if c != "zookeeper")


@dataclass(frozen=True)
class KafkaOnZk:
    """A ZooKeeper-mode Kafka cluster as the move needs it."""

    name: str
    broker_ids: tuple[int, ...]  # from the cluster's metadata
    zookeeper_connect: dict[int, str]  # per broker, its zookeeper.connect (with chroot)
    registered: tuple[int, ...]  # /<chroot>/brokers/ids on the source ensemble
    controller: int | None
    hosts: dict[int, str] | None = None  # per broker, its advertised host
    cluster_id: str | None = None
