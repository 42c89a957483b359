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
from kmigrate.gateway.control.mover import answers
from kmigrate.gateway.control.partition_moves import Migration, Mode, Status
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.kafka.admin import ClusterAdmin

log = logging.getLogger("kmigrate.gateway.aging")  # as before the move (logs)
Audit = Callable[[str, list[str], str], None]  # action, subjects, detail


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
        if not answers(clusters[origin].bootstrap_servers):
            continue  # down (a failover's origin): nothing to age now
        with ClusterAdmin(clusters[origin]) as admin:
            for topic, p in partitions:
                try:
                    starts = admin.partition_offsets([(topic, p)], "earliest")
                    found[(origin, topic, p)] = starts[(topic, p)]
                except TopicNotFoundError:
                    found[(origin, topic, p)] = None
    return found


def origin_ends(
    clusters: Mapping[str, ClusterConfig], table: RoutingTable
) -> dict[tuple[str, str, int], int]:
    """(origin, topic, partition) -> the origin's end offset, for failover migrations
    not finalised yet whose origin answers again."""
    wanted: dict[str, list[tuple[str, int]]] = {}
    for topic, route in table.topics.items():
        for p, chain in route.migrations.items():
            for m in chain:
                if m.mode is Mode.FAILOVER and m.flipped and m.origin_end is None:
                    wanted.setdefault(m.origin, []).append((topic, p))
    found: dict[tuple[str, str, int], int] = {}
    for origin, partitions in wanted.items():
        if origin in table.shielded or origin not in clusters:
            continue
        if not answers(clusters[origin].bootstrap_servers):
            continue
        with ClusterAdmin(clusters[origin]) as admin:
            ends = admin.partition_offsets(partitions, "latest")
        found.update({(origin, t, p): o for (t, p), o in ends.items()})
    return found


def finalised(table: RoutingTable, ends: Mapping[tuple[str, str, int], int]) -> RoutingTable:
    """``table`` with the origin's real end recorded in every failover migration whose
    origin answered again (which names the range it could not serve). Pure."""
    now = int(time.time() * 1000)

    def finish(topic: str, p: int, m: Migration) -> Migration:
        end = ends.get((m.origin, topic, p))
        if m.mode is not Mode.FAILOVER or m.origin_end is not None or end is None:
            return m
        return replace(m, origin_end=end, epoch=m.epoch + 1, changed_ms=now)

    return _each(table, finish)


def _each(table: RoutingTable, change: Callable[[str, int, Migration], Migration]) -> RoutingTable:
    topics = {}
    for topic, route in table.topics.items():
        migrations = {
            p: tuple(change(topic, p, m) for m in chain) for p, chain in route.migrations.items()
        }
        topics[topic] = replace(route, migrations=migrations)
    return replace(table, topics=topics)


def aged(table: RoutingTable, starts: Mapping[tuple[str, str, int], int | None]) -> RoutingTable:
    """``table`` with every migration whose origin's log start passed its end offset
    marked Aged. Pure."""
    now = int(time.time() * 1000)

    def age(topic: str, p: int, m: Migration) -> Migration:
        if m.status is not Status.MIGRATED or m.end_offset is None:
            return m
        start = starts.get((m.origin, topic, p), -1)
        if start is None or start >= m.end_offset:
            return replace(m, status=Status.AGED, epoch=m.epoch + 1, changed_ms=now)
        return m

    return _each(table, age)


def deletable(table: RoutingTable, group_home: str) -> list[tuple[str, str]]:
    """(origin, topic) pairs whose origin copy nobody needs: every partition migrated
    away from it is aged, none is written there, none asked to keep it. Pure."""
    found = []
    for topic, route in table.topics.items():
        origins: dict[str, bool] = {}  # origin -> all its records aged and none kept
        for chain in route.migrations.values():
            for m in chain:
                # records the failover could not serve stay where they are
                ok = m.status is Status.AGED and not m.keep_origin and not m.unavailable
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
    audit: Audit = lambda _action, _subjects, _detail: None,
) -> list[Aged]:
    """One pass of the timer: record what failed-over origins hold, mark what aged,
    delete origin topics nobody needs; each change also goes to ``audit``."""
    table = _finalise_pass(registry, clusters, audit)
    if table is None:
        return []  # changed meanwhile: the next pass sees the new table
    marked = _age_pass(registry, clusters, table, audit)
    _delete_pass(registry, clusters, group_home, audit)
    return marked


def _finalise_pass(
    registry: Registry, clusters: Mapping[str, ClusterConfig], audit: Audit
) -> RoutingTable | None:
    table = registry.read_routes()
    ends = origin_ends(clusters, table)
    if not ends:
        return table
    try:
        table = registry.write_routes(finalised(table, ends))
    except ConflictError:
        return None
    for topic, route in table.topics.items():
        for p, chain in route.migrations.items():
            for m in chain:
                if (m.origin, topic, p) not in ends:
                    continue
                detail = f"{m.origin} answers again and holds offsets up to {m.origin_end}"
                if m.unavailable:
                    detail += (
                        f"; its offsets {m.unavailable[0]}-{m.unavailable[1] - 1} were "
                        "written after the last high watermark recorded and are not served"
                    )
                    log.warning("%s[%d]: %s", topic, p, detail)
                audit("gateway failover finalised", [f"{topic}[{p}]"], detail)
    return table


def _age_pass(
    registry: Registry, clusters: Mapping[str, ClusterConfig], table: RoutingTable, audit: Audit
) -> list[Aged]:
    new = aged(table, origin_starts(clusters, table))
    marked = [
        Aged(topic, p, m.origin, m.end_offset or 0)
        for topic, route in new.topics.items()
        for p, chain in route.migrations.items()
        for i, m in enumerate(chain)
        if m.status is Status.AGED
        and table.topics[topic].migrations[p][i].status is not Status.AGED
    ]
    if not marked:
        return []
    try:
        registry.write_routes(new)
    except ConflictError:
        return []
    for a in marked:
        detail = f"aged on {a.origin}: nothing left below {a.end_offset}"
        log.info("%s[%d]: %s", a.topic, a.partition, detail)
        audit("gateway aged", [f"{a.topic}[{a.partition}]"], detail)
    return marked


def _delete_pass(
    registry: Registry, clusters: Mapping[str, ClusterConfig], group_home: str, audit: Audit
) -> None:
    for origin, topic in deletable(registry.read_routes(), group_home):
        try:
            with ClusterAdmin(clusters[origin]) as admin:
                if admin.describe_topics_if_present([topic]):
                    admin.delete_topics([topic])
                    detail = f"deleted on {origin}: every partition that left it aged"
                    log.info("topic %s %s", topic, detail)
                    audit("gateway origin deleted", [topic], detail)
        except KMigrateError as exc:
            log.warning("could not delete aged topic %s on %s: %s", topic, origin, exc)
