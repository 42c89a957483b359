"""The gateway's routing table: for every topic clients may use, the backend cluster
that holds its partitions (one cluster per topic, with per-partition exceptions).

Pure: the table is a value kept as JSON in ZooKeeper; every change is a new table
written with a compare-and-set on the znode's version (kmigrate.gateway.registry).
A topic that is not in the table does not exist for the gateway's clients.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kmigrate.errors import ConfigError

FORMAT = 1


@dataclass(frozen=True)
class TopicRoute:
    cluster: str  # where the topic's partitions live
    partitions: Mapping[int, str] = field(default_factory=dict)  # exceptions, per partition

    def cluster_of(self, partition: int) -> str:
        return self.partitions.get(partition, self.cluster)

    def clusters(self) -> set[str]:
        return {self.cluster, *self.partitions.values()}


@dataclass(frozen=True)
class RoutingTable:
    topics: Mapping[str, TopicRoute] = field(default_factory=dict)
    version: int = -1  # the znode version it was read at; -1: not stored yet

    def cluster_of(self, topic: str, partition: int) -> str | None:
        route = self.topics.get(topic)
        return route.cluster_of(partition) if route else None

    def with_route(
        self, topic: str, cluster: str, partitions: Iterable[int] | None = None
    ) -> RoutingTable:
        """This table with ``topic`` (or only its ``partitions``) routed to ``cluster``."""
        current = self.topics.get(topic)
        if partitions is None:
            route = TopicRoute(cluster)
        elif current is None:
            raise ConfigError(
                f"topic '{topic}' has no route yet; route the whole topic first "
                "(without --partitions)"
            )
        else:
            exceptions = dict(current.partitions)
            for p in partitions:
                if cluster == current.cluster:
                    exceptions.pop(p, None)
                else:
                    exceptions[p] = cluster
            route = replace(current, partitions=exceptions)
        return replace(self, topics={**self.topics, topic: route})

    def without(self, topic: str) -> RoutingTable:
        if topic not in self.topics:
            raise ConfigError(f"topic '{topic}' has no route")
        return replace(self, topics={t: r for t, r in self.topics.items() if t != topic})

    def to_json(self) -> bytes:
        body = {
            "format": FORMAT,
            "topics": {
                name: {
                    "cluster": route.cluster,
                    "partitions": {str(p): c for p, c in sorted(route.partitions.items())},
                }
                for name, route in sorted(self.topics.items())
            },
        }
        return json.dumps(body, sort_keys=True).encode()


def parse_table(raw: bytes | None, version: int) -> RoutingTable:
    """The table stored in a znode (empty bytes: no routes yet)."""
    if not raw:
        return RoutingTable(version=version)
    try:
        body = json.loads(raw)
        if body.get("format") != FORMAT:
            raise ValueError(f"format {body.get('format')!r}, expected {FORMAT}")
        topics = {
            name: TopicRoute(
                str(entry["cluster"]),
                {int(p): str(c) for p, c in entry.get("partitions", {}).items()},
            )
            for name, entry in body["topics"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"the gateway's routing table is not readable: {exc}") from None
    return RoutingTable(topics, version)
