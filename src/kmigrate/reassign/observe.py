"""Reading a cluster as the planner's model: live brokers and racks, every partition's
replicas, and their sizes on disk."""

from __future__ import annotations

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.reassign.model import BrokerNode, ClusterModel, Partition


def read_cluster(
    admin: ClusterAdmin, moves: Reassignments, *, include_internal: bool = False
) -> ClusterModel:
    info = admin.describe_cluster()
    topics = admin.list_topics(include_internal=include_internal)
    live = {b.node_id: b for b in info.brokers}
    sizes = moves.replica_sizes(sorted(live))
    named = {r for t in topics for p in t.partitions for r in p.replicas}
    brokers = [BrokerNode(b.node_id, b.rack, True) for b in info.brokers]
    brokers += [BrokerNode(b, None, False) for b in sorted(named - set(live))]
    partitions = tuple(
        Partition(
            t.name,
            p.partition,
            tuple(p.replicas),
            max((sizes.get((t.name, p.partition, r), 0) for r in p.replicas), default=0),
            p.leader,
        )
        for t in sorted(topics, key=lambda t: t.name)
        for p in t.partitions
    )
    return ClusterModel(tuple(sorted(brokers)), partitions, info.cluster_id)


def broker_bytes(moves: Reassignments, live: list[int]) -> dict[int, int]:
    """Bytes on each live broker's disk (every replica it holds)."""
    totals: dict[int, int] = {}
    for (_, _, broker), size in moves.replica_sizes(live).items():
        totals[broker] = totals.get(broker, 0) + size
    return totals
