"""What each broker holds, as `brokers list` shows it: rack, alive, replicas, leaders
now, preferred leaders, bytes on disk; and how uneven the replicas are."""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.reassign.model import Spread
from kmigrate.reassign.observe import broker_bytes, read_cluster


@dataclass(frozen=True)
class BrokerRow:
    id: int
    rack: str | None
    alive: bool
    replicas: int
    leaders: int
    preferred_leaders: int
    bytes: int


def broker_rows(admin: ClusterAdmin, kafka: Reassignments) -> list[BrokerRow]:
    """Every broker the cluster knows (a dead one too, with what it should hold)."""
    model = read_cluster(admin, kafka, include_internal=True)
    leaders: dict[int, int] = {}
    for topic in admin.list_topics(include_internal=True):
        for p in topic.partitions:
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
    disk = broker_bytes(kafka, model.live_ids)
    spread = Spread.of(model.partitions, [b.node_id for b in model.brokers])
    return [
        BrokerRow(
            b.node_id,
            b.rack,
            b.alive,
            spread.replicas.get(b.node_id, 0),
            leaders.get(b.node_id, 0),
            spread.leaders.get(b.node_id, 0),
            disk.get(b.node_id, 0),
        )
        for b in model.brokers
    ]


def imbalance(rows: list[BrokerRow]) -> tuple[int, int]:
    """(replicas on live brokers, most minus fewest per live broker)."""
    counts = [r.replicas for r in rows if r.alive] or [0]
    return sum(counts), max(counts) - min(counts)
