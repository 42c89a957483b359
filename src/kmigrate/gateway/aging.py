"""The aging timer (seed 000, step 8): a migrated partition's origin keeps serving reads
below ``end_offset`` until its retention has deleted them; then the migration is marked
``Aged`` (reads of those offsets are out of range, the earliest offset is
``end_offset``), and once every partition that left an origin topic is aged and none is
written there any more, the origin topic is deleted, unless a migration asked to keep
it. The group home's copy of a topic is never deleted: it holds the committed offsets.

One pass is synchronous (it runs in a thread of the instance); the live instance with the
lowest id runs it, and every change is a compare-and-set, so two instances that both
believe they are the lowest do no harm.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kmigrate.config import ClusterConfig
from kmigrate.errors import ConflictError, KMigrateError, TopicNotFoundError
from kmigrate.gateway.migrations import Status
from kmigrate.gateway.registry import Registry
from kmigrate.gateway.routes import RoutingTable
from kmigrate.kafka.admin import ClusterAdmin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Aged:
    topic: str
    partition: int
    origin: str
    end_offset: int


def origin_starts(
    clusters: Mapping[str, ClusterConfig], table: RoutingTable
) -> dict[tuple[str, str, int], int | None]:
    """(origin, topic, partition) -> the origin's log start, for every migrated
    (not aged) record; None when the origin no longer has the topic."""
    wanted: dict[str, list[tuple[str, int]]] = {}
    for topic, route in table.topics.items():
        for p, chain in route.migrations.items():
            for m in chain:
                if m.status is Status.MIGRATED:
                    wanted.setdefault(m.origin, []).append((topic, p))
    found: dict[tuple[str, str, int], int | None] = {}
    for origin, partitions in wanted.items():
        if origin in table.shielded or origin not in clusters:
            continue
        with ClusterAdmin(clusters[origin]) as admin:
            for topic, p in partitions:
                try:
                    starts = admin.partition_offsets([(topic, p)], "earliest")
                    found[(origin, topic, p)] = starts[(topic, p)]
                except TopicNotFoundError:
                    found[(origin, topic, p)] = None
    return found


def aged(table: RoutingTable, starts: Mapping[tuple[str, str, int], int | None]) -> RoutingTable:
    """``table`` with every migration whose origin's log start passed its end offset
    marked Aged. Pure."""
    now = int(time.time() * 1000)
    for topic, route in table.topics.items():
        for p, chain in route.migrations.items():
            changed = False
            records = list(chain)
            for i, m in enumerate(records):
                if m.status is not Status.MIGRATED or m.end_offset is None:
                    continue
                start = starts.get((m.origin, topic, p), -1)
                if start is None or start >= m.end_offset:
                    records[i] = replace(m, status=Status.AGED, epoch=m.epoch + 1, changed_ms=now)
                    changed = True
            if changed:
                current = table.topics[topic]
                table = replace(
                    table,
                    topics={
                        **table.topics,
                        topic: replace(
                            current, migrations={**current.migrations, p: tuple(records)}
                        ),
                    },
                )
    return table


def deletable(table: RoutingTable, group_home: str) -> list[tuple[str, str]]:
    """(origin, topic) pairs whose origin copy nobody needs: every partition migrated
    away from it is aged, none is written there, none asked to keep it. Pure."""
    found = []
    for topic, route in table.topics.items():
        origins: dict[str, bool] = {}  # origin -> all its records aged and none kept
        for chain in route.migrations.values():
            for m in chain:
                ok = m.status is Status.AGED and not m.keep_origin
                origins[m.origin] = origins.get(m.origin, True) and ok
        written = {route.cluster, *route.partitions.values()}
        found += [
            (origin, topic)
            for origin, ok in origins.items()
            if ok and origin not in written and origin != group_home
        ]
    return found


def age_once(
    registry: Registry,
    clusters: Mapping[str, ClusterConfig],
    group_home: str,
    deleted: Callable[[str, str], None] = lambda _o, _t: None,
) -> list[Aged]:
    """One pass of the timer: mark what aged, delete origin topics nobody needs."""
    table = registry.read_routes()
    starts = origin_starts(clusters, table)
    new = aged(table, starts)
    marked = [
        Aged(topic, p, m.origin, m.end_offset or 0)
        for topic, route in new.topics.items()
        for p, chain in route.migrations.items()
        for i, m in enumerate(chain)
        if m.status is Status.AGED
        and table.topics[topic].migrations[p][i].status is not Status.AGED
    ]
    if marked:
        try:
            registry.write_routes(new)
        except ConflictError:
            return []  # changed meanwhile: the next pass sees the new table
        for a in marked:
            log.info(
                "%s[%d]: aged on %s (nothing left below %d)",
                a.topic,
                a.partition,
                a.origin,
                a.end_offset,
            )
    for origin, topic in deletable(registry.read_routes(), group_home):
        try:
            with ClusterAdmin(clusters[origin]) as admin:
                if admin.describe_topics_if_present([topic]):
                    admin.delete_topics([topic])
                    log.info(
                        "deleted topic %s on %s: every partition that left it aged", topic, origin
                    )
                    deleted(origin, topic)
        except KMigrateError as exc:
            log.warning("could not delete aged topic %s on %s: %s", topic, origin, exc)
    return marked
