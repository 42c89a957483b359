"""Which source partitions a link mirrors, and target topics that match them.

Run before the mirror starts and at every refresh: it picks up new topics that match
the link's regex and partitions added on the source, creates or grows their target
topics, and begins their offset maps. Checks come first: when an existing target
topic cannot be adopted nothing at all is created or changed.

Its cost does not grow with the topic count: Kafka is asked in bulk (one describe of
the new topics and their configs, one CreateTopics per batch of topics, one
CreatePartitions, one ListOffsets per question for all partitions) and the store is
written in a fixed number of transactions (the new topics, the grown or deleted ones,
the new partitions' maps).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kmigrate.errors import ConflictError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicInfo
from kmigrate.model.links import Link, LinkTopic, StartPosition, TopicState
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of, owners_of, put_topics
from kmigrate.store.offsets import PartitionStart, mapped_partitions, start_partitions

Report = Callable[[str], None]
ACTIVE_STATES = (TopicState.MIRRORING, TopicState.PROMOTING)
# Up to this many topics a change is reported topic by topic; more, in one line.
REPORTED_ONE_BY_ONE = 10


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
    mapped = mapped_partitions(store, link.name)
    matching = {t.name: t for t in source.list_topics() if not t.internal and link.matches(t.name)}
    new = sorted(name for name in matching if name not in stored)
    # Described with their configs, which the target copies are created with.
    matching.update({t.name: t for t in source.describe_topics(new)})
    sources = [matching[name] for name in new]
    existing = {t.name: t for t in target.describe_topics_if_present(new)}
    _check_adoptable(store, link, sources, existing, target)
    created = _adopt(store, link, sources, existing, target, report)
    _follow(store, link, list(stored.values()), matching, target, report)
    active = {
        t.topic: t.partitions for t in link_topics_of(store, link.name) if t.state in ACTIVE_STATES
    }
    assignment = Assignment(active)
    _start_maps(store, link, assignment, mapped, created, source, target)
    return assignment


def _check_adoptable(
    store: Store,
    link: Link,
    sources: Sequence[TopicInfo],
    existing: dict[str, TopicInfo],
    target: ClusterAdmin,
) -> None:
    """Every reason an existing target topic cannot be adopted, in one error."""
    if not existing:
        return
    owners = owners_of(store, link.target, existing)
    problems = []
    unowned = []
    for source in sources:
        found = existing.get(source.name)
        if found is None:
            continue
        problem = _shape_problem(link, source, found, owners.get(source.name))
        if problem:
            problems.append(problem)
        elif source.name not in owners:
            unowned.append(found)
    for name in sorted(_holding_records(target, unowned)):
        problems.append(
            f"target topic '{name}' on cluster '{link.target}' already holds records and "
            "belongs to no link; delete it (or its records) or narrow --topics"
        )
    if problems:
        raise ConflictError("; ".join(problems))


def _shape_problem(
    link: Link, source: TopicInfo, existing: TopicInfo, owner: str | None
) -> str | None:
    name = source.name
    if owner is not None and owner != link.name:
        return (
            f"target topic '{name}' on cluster '{link.target}' belongs to link '{owner}'; "
            "stop or exclude it there, or narrow --topics"
        )
    if existing.partition_count != source.partition_count:
        return (
            f"target topic '{name}' on cluster '{link.target}' has "
            f"{existing.partition_count} partition(s), source has {source.partition_count}; "
            "delete it or narrow --topics"
        )
    return None


def _holding_records(target: ClusterAdmin, topics: Sequence[TopicInfo]) -> set[str]:
    """The topics with a partition whose high watermark is above its low one.

    One ListOffsets for every partition's end; only partitions that ever held a record
    (end above 0) are asked for their start, in one more."""
    ends = target.partition_offsets(
        [(t.name, p.partition) for t in topics for p in t.partitions], "latest"
    )
    written = [tp for tp, end in ends.items() if end > 0]
    starts = target.partition_offsets(written, "earliest")
    return {topic for topic, p in written if starts[(topic, p)] < ends[(topic, p)]}


def _adopt(
    store: Store,
    link: Link,
    sources: Sequence[TopicInfo],
    existing: dict[str, TopicInfo],
    target: ClusterAdmin,
    report: Report,
) -> set[str]:
    """Create the missing target topics, then own every new topic, in one transaction;
    returns the names of the topics created."""
    created = [s for s in sources if s.name not in existing]
    target.create_topics_like(created, replication_factor=link.replication_factor)
    put_topics(
        store,
        [LinkTopic(link.name, s.name, s.partition_count, TopicState.MIRRORING) for s in sources],
    )
    partitions = sum(s.partition_count for s in created)
    _tell(
        report,
        [f"created {s.name} on {link.target} ({s.partition_count} partitions)" for s in created],
        f"created {len(created)} topics on {link.target} ({partitions} partitions)",
    )
    adopted = [s.name for s in sources if s.name in existing]
    _tell(
        report,
        [f"adopted empty {name} on {link.target}" for name in adopted],
        f"adopted {len(adopted)} empty topics on {link.target}",
    )
    return {s.name for s in created}


def _tell(report: Report, lines: list[str], summary: str) -> None:
    """Each line when there are few; else the summary alone."""
    for line in lines if len(lines) <= REPORTED_ONE_BY_ONE else [summary]:
        report(line)


def _follow(
    store: Store,
    link: Link,
    stored: Sequence[LinkTopic],
    matching: dict[str, TopicInfo],
    target: ClusterAdmin,
    report: Report,
) -> None:
    """Stop mirroring topics deleted on the source; grow the targets of grown ones."""
    active = [t for t in stored if t.state in ACTIVE_STATES]
    deleted = [t for t in active if t.topic not in matching]
    grown = {
        t.topic: matching[t.topic].partition_count
        for t in active
        if t.topic in matching and matching[t.topic].partition_count > t.partitions
    }
    if grown:
        # Grown already (by an earlier sync that failed or stopped before the store
        # knew): Kafka would refuse to grow it to its own size.
        on_target = {t.name: t.partition_count for t in target.list_topics()}
        target.grow_topics({t: n for t, n in grown.items() if on_target.get(t, 0) < n})
    by_name = {t.topic: t for t in active}
    put_topics(
        store,
        [LinkTopic(link.name, t.topic, t.partitions, TopicState.SOURCE_DELETED) for t in deleted]
        + [LinkTopic(link.name, name, n, by_name[name].state) for name, n in grown.items()],
    )
    for t in deleted:
        report(f"{t.topic} was deleted on {link.source}; its mirror stopped")
    for name, n in grown.items():
        report(f"{name}: source grew to {n} partitions; added them on the target")


def _start_maps(
    store: Store,
    link: Link,
    assignment: Assignment,
    mapped: set[tuple[str, int]],
    created: set[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
) -> None:
    """Begin the map of every partition that has none: from the link's start position
    on the source, at the target partition's end."""
    fresh = [tp for tp in assignment.pairs() if tp not in mapped]
    if not fresh:
        return
    # Partitions that appear after the link started hold only records newer than its
    # start, so they are mirrored from their beginning.
    start = link.start if not mapped else StartPosition("earliest")
    source_starts = _start_offsets(source, fresh, start)
    # A topic created just now ends at 0: not asked (its broker may still be making
    # thousands of logs). Were anyone to write to it first, the mirror's first batch
    # finds the target ahead of the map and stops instead of counting it as the map's.
    target_ends = target.partition_offsets([tp for tp in fresh if tp[0] not in created], "latest")
    start_partitions(
        store,
        link.name,
        [PartitionStart(t, p, source_starts[(t, p)], target_ends.get((t, p), 0)) for t, p in fresh],
    )


def _start_offsets(
    source: ClusterAdmin, partitions: list[tuple[str, int]], start: StartPosition
) -> dict[tuple[str, int], int]:
    if start.kind == "earliest":
        return source.partition_offsets(partitions, "earliest")
    if start.kind == "latest":
        return source.partition_offsets(partitions, "latest", committed_only=True)
    assert start.timestamp_ms is not None
    # A partition without a record at or after the time starts at its end: a consumer
    # seeking there reads only newer records.
    found = source.offsets_for_times({tp: start.timestamp_ms for tp in partitions})
    ends = source.partition_offsets([tp for tp, o in found.items() if o is None], "latest")
    return {tp: ends[tp] if offset is None else offset for tp, offset in found.items()}
