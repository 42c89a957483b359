"""Which source partitions a link mirrors, and target topics that match them.

Run before the mirror starts and at every refresh: it picks up new topics that match
the link's regex and partitions added on the source, creates or grows their target
topics, and begins their offset maps. Checks come first: when an existing target
topic cannot be adopted nothing at all is created or changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kmigrate.errors import ConflictError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicInfo
from kmigrate.model.links import Link, LinkTopic, StartPosition, TopicState
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of, owner_of, put_topic, set_topic_state
from kmigrate.store.offsets import load_partitions, start_partition

Report = Callable[[str], None]
ACTIVE_STATES = (TopicState.MIRRORING, TopicState.PROMOTING)


@dataclass(frozen=True)
class Assignment:
    """The source partitions the mirror reads, per topic."""

    partitions: dict[str, int]  # topic -> partition count

    def pairs(self) -> list[tuple[str, int]]:
        return [(t, p) for t, n in sorted(self.partitions.items()) for p in range(n)]


def sync_topology(
    store: Store,
    link: Link,
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
) -> Assignment:
    """Bring the link's target topics and maps in line with the source; return what to read."""
    stored = {t.topic: t for t in link_topics_of(store, link.name)}
    first_sync = not load_partitions(store, link.name)
    matching = {t.name: t for t in source.list_topics() if not t.internal and link.matches(t.name)}
    new = sorted(name for name in matching if name not in stored)
    # Described with their configs, which the target copies are created with.
    matching.update({t.name: t for t in source.describe_topics(new)})
    target_topics = {t.name: t for t in target.describe_topics_if_present(new)}
    for name in new:
        _check_adoptable(store, link, matching[name], target_topics.get(name), target)
    for name in new:
        _adopt(store, link, matching[name], target_topics.get(name), target, report)
    for name, topic in stored.items():
        _follow(store, link, topic, matching.get(name), target, report)
    active = {
        t.topic: t.partitions for t in link_topics_of(store, link.name) if t.state in ACTIVE_STATES
    }
    assignment = Assignment(active)
    _start_maps(store, link, assignment, source, target, first_sync)
    return assignment


def _check_adoptable(
    store: Store, link: Link, source: TopicInfo, existing: TopicInfo | None, target: ClusterAdmin
) -> None:
    if existing is None:
        return
    name = source.name
    owner = owner_of(store, link.target, name)
    if owner is not None and owner != link.name:
        raise ConflictError(
            f"target topic '{name}' on cluster '{link.target}' belongs to link '{owner}'; "
            "stop or exclude it there, or narrow --topics"
        )
    if existing.partition_count != source.partition_count:
        raise ConflictError(
            f"target topic '{name}' on cluster '{link.target}' has "
            f"{existing.partition_count} partition(s), source has {source.partition_count}; "
            "delete it or narrow --topics"
        )
    marks = target.watermarks(name)
    if owner is None and any(w.high > w.low for w in marks):
        raise ConflictError(
            f"target topic '{name}' on cluster '{link.target}' already holds records and "
            "belongs to no link; delete it (or its records) or narrow --topics"
        )


def _adopt(
    store: Store,
    link: Link,
    source: TopicInfo,
    existing: TopicInfo | None,
    target: ClusterAdmin,
    report: Report,
) -> None:
    if existing is None:
        target.create_topic_like(source, replication_factor=link.replication_factor)
        report(f"created {source.name} on {link.target} ({source.partition_count} partitions)")
    else:
        report(f"adopted empty {source.name} on {link.target}")
    put_topic(store, link.name, source.name, source.partition_count, TopicState.MIRRORING)


def _follow(
    store: Store,
    link: Link,
    stored: LinkTopic,
    source: TopicInfo | None,
    target: ClusterAdmin,
    report: Report,
) -> None:
    if stored.state not in ACTIVE_STATES:
        return
    if source is None:
        set_topic_state(store, link.name, stored.topic, TopicState.SOURCE_DELETED)
        report(f"{stored.topic} was deleted on {link.source}; its mirror stopped")
        return
    if source.partition_count > stored.partitions:
        target.create_partitions(stored.topic, source.partition_count)
        put_topic(store, link.name, stored.topic, source.partition_count, stored.state)
        report(
            f"{stored.topic}: source grew to {source.partition_count} partitions; "
            "added them on the target"
        )


def _start_maps(
    store: Store,
    link: Link,
    assignment: Assignment,
    source: ClusterAdmin,
    target: ClusterAdmin,
    first_sync: bool,
) -> None:
    known = {(s.topic, s.partition) for s in load_partitions(store, link.name)}
    fresh = [tp for tp in assignment.pairs() if tp not in known]
    if not fresh:
        return
    # Partitions that appear after the link started hold only records newer than its
    # start, so they are mirrored from their beginning.
    start = link.start if first_sync else StartPosition("earliest")
    source_starts = _start_offsets(source, fresh, start)
    target_ends = target.partition_offsets(fresh, "latest")
    for tp in fresh:
        start_partition(store, link.name, tp[0], tp[1], source_starts[tp], target_ends[tp])


def _start_offsets(
    source: ClusterAdmin, partitions: list[tuple[str, int]], start: StartPosition
) -> dict[tuple[str, int], int]:
    if start.kind == "earliest":
        return source.partition_offsets(partitions, "earliest")
    if start.kind == "latest":
        return source.partition_offsets(partitions, "latest", committed_only=True)
    assert start.timestamp_ms is not None
    result: dict[tuple[str, int], int] = {}
    for topic in sorted({t for t, _ in partitions}):
        for found in source.offsets_for_timestamp(topic, start.timestamp_ms):
            if (topic, found.partition) in partitions:
                result[(topic, found.partition)] = found.offset
    return result
