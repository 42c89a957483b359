"""The gateway's routing table: for every topic clients may use, the backend cluster
that holds its partitions (one cluster per topic, with per-partition exceptions).

Pure: the table is a value kept as JSON in ZooKeeper; every change is a new table
written with a compare-and-set on the znode's version (kmigrate.gateway.control.shared_state).
A topic that is not in the table does not exist for the gateway's clients. Next to the
routes live each partition's migrations (kmigrate.gateway.control.partition_moves), the shielded
clusters and the default route (the cluster where topics clients create through the
gateway are made), so one compare-and-set changes a route and its migration record
together.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kmigrate.errors import ConfigError
from kmigrate.gateway.control.partition_moves import Migration, Segment, Status, segments

FORMAT = 2
READABLE_FORMATS = (1, 2)


@dataclass(frozen=True)
class TopicRoute:
    cluster: str  # where the topic's partitions live
    partitions: Mapping[int, str] = field(default_factory=dict)  # exceptions, per partition
    migrations: Mapping[int, tuple[Migration, ...]] = field(default_factory=dict)  # oldest first

    def cluster_of(self, partition: int) -> str:
        return self.partitions.get(partition, self.cluster)

    def space(self, partition: int) -> list[Segment] | None:
        """The partition's virtual offset space; None when it never migrated (client
        offsets are its cluster's)."""
        chain = self.migrations.get(partition)
        if not chain or not chain[0].flipped:
            return None
        return segments(self.cluster_of(partition), chain)

    def migrating(self, partition: int) -> Migration | None:
        """The partition's migration whose writes are fenced now, if any."""
        chain = self.migrations.get(partition)
        return chain[-1] if chain and not chain[-1].flipped else None

    def clusters(self) -> set[str]:
        return {self.cluster, *self.partitions.values()}


@dataclass(frozen=True)
class RoutingTable:
    topics: Mapping[str, TopicRoute] = field(default_factory=dict)
    version: int = -1  # the znode version it was read at; -1: not stored yet
    shielded: frozenset[str] = frozenset()  # clusters the gateway sends nothing to
    default: str | None = None  # where CreateTopics through the gateway makes topics

    def cluster_of(self, topic: str, partition: int) -> str | None:
        route = self.topics.get(topic)
        return route.cluster_of(partition) if route else None

    def with_route(
        self, topic: str, cluster: str, partitions: Iterable[int] | None = None
    ) -> RoutingTable:
        """This table with ``topic`` (or only its ``partitions``) routed to ``cluster``."""
        current = self.topics.get(topic)
        if current is not None and current.migrations and partitions is None:
            raise ConfigError(
                f"topic '{topic}' has partition migrations (its clients read virtual "
                "offsets); move its partitions with `kmigrate gateway migrate`"
            )
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

    def with_migration(
        self, topic: str, partition: int, migration: Migration, *, replace_last: bool
    ) -> RoutingTable:
        """This table with ``migration`` as ``topic[partition]``'s newest record (in place
        of the newest one with ``replace_last``); a flipped one also routes the partition
        to its target."""
        current = self.topics[topic]
        chain = tuple(current.migrations.get(partition, ()))
        chain = (chain[:-1] if replace_last else chain) + (migration,)
        route = replace(current, migrations={**current.migrations, partition: chain})
        table = replace(self, topics={**self.topics, topic: route})
        if migration.flipped:
            table = table.with_route(topic, migration.target, [partition])
        return table

    def normalized(self, topic: str, count: int) -> RoutingTable:
        """This table with ``topic``'s cluster the one that holds all its ``count``
        partitions, when one does (no exceptions left), its migrations kept."""
        route = self.topics[topic]
        where = {route.cluster_of(p) for p in range(count)}
        if len(where) != 1 or (route.cluster in where and not route.partitions):
            return self
        whole = replace(route, cluster=where.pop(), partitions={})
        return replace(self, topics={**self.topics, topic: whole})

    def with_shield(self, cluster: str, on: bool) -> RoutingTable:
        shielded = self.shielded | {cluster} if on else self.shielded - {cluster}
        return replace(self, shielded=frozenset(shielded))

    def with_default(self, cluster: str | None) -> RoutingTable:
        """This table with ``cluster`` as the default route (None: no default route)."""
        return replace(self, default=cluster)

    def holders(self, topic: str) -> set[str]:
        """Every cluster holding records of ``topic`` clients can read: its routes and
        the origins of its moves not aged yet."""
        route = self.topics[topic]
        origins = {
            m.origin
            for chain in route.migrations.values()
            for m in chain
            if m.status is not Status.AGED
        }
        return route.clusters() | origins

    def without(self, topic: str) -> RoutingTable:
        if topic not in self.topics:
            raise ConfigError(f"topic '{topic}' has no route")
        return replace(self, topics={t: r for t, r in self.topics.items() if t != topic})

    def to_json(self) -> bytes:
        body = {
            "format": FORMAT,
            "shielded": sorted(self.shielded),
            "default": self.default,
            "topics": {
                name: {
                    "cluster": route.cluster,
                    "partitions": {str(p): c for p, c in sorted(route.partitions.items())},
                    "migrations": {
                        str(p): [m.to_json() for m in chain]
                        for p, chain in sorted(route.migrations.items())
                    },
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
        if body.get("format") not in READABLE_FORMATS:
            raise ValueError(f"format {body.get('format')!r}, expected one of {READABLE_FORMATS}")
        topics = {
            name: TopicRoute(
                str(entry["cluster"]),
                {int(p): str(c) for p, c in entry.get("partitions", {}).items()},
                {
                    int(p): tuple(Migration.from_json(m) for m in chain)
                    for p, chain in entry.get("migrations", {}).items()
                },
            )
            for name, entry in body["topics"].items()
        }
        shielded = frozenset(str(c) for c in body.get("shielded", ()))
        default = body.get("default")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"the gateway's routing table is not readable: {exc}") from None
    return RoutingTable(topics, version, shielded, None if default is None else str(default))
