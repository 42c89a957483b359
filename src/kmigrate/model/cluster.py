"""What the admin layer reports about a cluster: brokers, topics, offsets, groups, ACLs.

The admin layer returns these, never client futures or client objects, so the
rest of kmigrate (and its tests of pure logic) need no Kafka client at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class ClusterInfo:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[Broker, ...]


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class TopicInfo:
    """A topic as described by the admin API: placement and non-default configs."""

    name: str
    partitions: tuple[PartitionInfo, ...]
    configs: dict[str, str] = field(default_factory=dict)
    internal: bool = False

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class Watermarks:
    """The offsets of one partition: first retained record and the next offset to be written."""

    topic: str
    partition: int
    low: int
    high: int

    @property
    def count(self) -> int:
        return self.high - self.low


@dataclass(frozen=True)
class TopicPartitionOffset:
    topic: str
    partition: int
    offset: int
    # For offsets looked up by timestamp: the timestamp of the record found (-1 if none).
    timestamp: int | None = None


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class GroupSummary:
    group_id: str
    state: str
    is_simple: bool


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed position in one partition, with the lag behind the log end."""

    topic: str
    partition: int
    committed: int
    log_end: int | None = None

    @property
    def lag(self) -> int | None:
        if self.log_end is None or self.committed < 0:
            return None
        return max(self.log_end - self.committed, 0)


@dataclass(frozen=True)
class GroupInfo:
    group_id: str
    state: str
    members: tuple[GroupMember, ...]
    offsets: tuple[CommittedOffset, ...] = ()
    coordinator: int | None = None

    @property
    def total_lag(self) -> int:
        return sum(o.lag or 0 for o in self.offsets)


@dataclass(frozen=True, order=True)
class AclEntry:
    """One ACL binding, with enum values as their Kafka names (e.g. TOPIC, LITERAL, READ, ALLOW)."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str
