"""What the reassignment planner reads: brokers and partitions as values (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class BrokerNode:
    node_id: int
    rack: str | None = None
    alive: bool = True


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]  # in order: the first is the preferred leader
    size_bytes: int = 0  # the largest replica's size on disk
    leader: int | None = None  # the current leader when known (else: the preferred)

    @property
    def current_leader(self) -> int | None:
        return (
            self.leader
            if self.leader is not None and self.leader >= 0
            else (self.replicas[0] if self.replicas else None)
        )

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class ClusterModel:
    brokers: tuple[BrokerNode, ...]
    partitions: tuple[Partition, ...]
    cluster_id: str | None = None

    def broker(self, node_id: int) -> BrokerNode | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    @property
    def live_ids(self) -> list[int]:
        return sorted(b.node_id for b in self.brokers if b.alive)

    def racks(self) -> dict[int, str | None]:
        return {b.node_id: b.rack for b in self.brokers}


@dataclass(frozen=True)
class Spread:
    """Per broker: replicas, preferred leaders and bytes of the partitions counted."""

    replicas: Mapping[int, int] = field(default_factory=dict)
    leaders: Mapping[int, int] = field(default_factory=dict)
    bytes: Mapping[int, int] = field(default_factory=dict)

    @staticmethod
    def of(assignment: Iterable[Partition], brokers: Iterable[int]) -> Spread:
        replicas = dict.fromkeys(brokers, 0)
        leaders = dict.fromkeys(replicas, 0)
        sizes = dict.fromkeys(replicas, 0)
        for p in assignment:
            for i, b in enumerate(p.replicas):
                replicas[b] = replicas.get(b, 0) + 1
                sizes[b] = sizes.get(b, 0) + p.size_bytes
                if i == 0:
                    leaders[b] = leaders.get(b, 0) + 1
        return Spread(replicas, leaders, sizes)
