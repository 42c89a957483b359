"""What clients are told about the gateway's own "brokers" (its live instances): which
one leads each partition, and the ids that must stay stable. Pure."""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

_TOPIC_IDS = uuid.UUID("6b6d6967-7261-7465-6761-746577617900")  # "kmigrate gateway"


@dataclass(frozen=True, order=True)
class Instance:
    """One running gateway instance, as registered in ZooKeeper."""

    node_id: int
    host: str
    port: int


def leader_of(topic: str, partition: int, instances: Sequence[Instance]) -> Instance:
    """The instance that clients should send ``topic``/``partition`` to: spread evenly
    over the live instances and stable while they stay (any instance serves any
    partition; this only spreads the load)."""
    ordered = sorted(instances)
    return ordered[(zlib.crc32(topic.encode()) + partition) % len(ordered)]


def topic_id(topic: str) -> uuid.UUID:
    """A topic's id as the gateway shows it: the same on every instance, forever."""
    return uuid.uuid5(_TOPIC_IDS, topic)
