"""What each planned topic costs to move: its records and bytes on the source.

Read in a number of round trips that does not grow with the partitions: two
ListOffsets for every partition at once, and one DescribeLogDirs per broker. When a
broker does not answer DescribeLogDirs (not authorized, a client setting kafka-python
lacks), the topics it leaves unsized are estimated from their records times an average
record size read from a few of them, and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.config import ClusterConfig
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.kafka.records import read_partition
from kmigrate.migration.waves import TopicSize
from kmigrate.model.cluster import TopicInfo

Offsets = dict[tuple[str, int], int]
# The estimate reads this many records from each of this many topics (the largest).
SAMPLE_RECORDS = 50
SAMPLE_TOPICS = 8
# When no record could be read either: 1 KB, the record size of the benchmarks
# and of MSK Replicator's sizing guide.
ASSUMED_RECORD_BYTES = 1024.0


@dataclass(frozen=True)
class Measured:
    sizes: list[TopicSize]
    bytes_from: str  # how: "log-dirs", or says which topics were estimated and how


def measure(source: ClusterAdmin, topics: list[TopicInfo]) -> Measured:
    """Records (high - low watermark) and bytes of every partition of ``topics``; bytes
    from the brokers' log dirs (the largest replica), else estimated."""
    pairs = [(t.name, p.partition) for t in topics for p in t.partitions]
    low = source.partition_offsets(pairs, "earliest")
    high = source.partition_offsets(pairs, "latest")
    on_disk = log_dir_bytes(source.cluster, topics)
    records = {t.name: sum(high[k] - low[k] for k in _keys(t)) for t in topics}
    unsized = [t for t in topics if records[t.name] and any(k not in on_disk for k in _keys(t))]
    sampled = average_record_size(source.cluster, unsized, low, high) if unsized else None
    average = sampled or ASSUMED_RECORD_BYTES
    estimated = {t.name for t in unsized}
    sizes = [
        TopicSize(
            t.name,
            round(records[t.name] * average)
            if t.name in estimated
            else sum(on_disk.get(k, 0) for k in _keys(t)),
            records[t.name],
        )
        for t in topics
    ]
    if not estimated:
        return Measured(sizes, "log-dirs")
    how = f"records x {average:,.0f} B {'sampled' if sampled else 'assumed'}"
    if not on_disk:
        return Measured(sizes, how)
    return Measured(sizes, f"log-dirs; {len(estimated)} of {len(topics)} topic(s): {how}")


def _keys(topic: TopicInfo) -> list[tuple[str, int]]:
    return [(topic.name, p.partition) for p in topic.partitions]


def log_dir_bytes(cluster: ClusterConfig, topics: list[TopicInfo]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> bytes of its largest replica, for the partitions whose
    brokers answered DescribeLogDirs (none when the call cannot be made at all)."""
    wanted = {k for t in topics for k in _keys(t)}
    brokers = sorted({b for t in topics for p in t.partitions for b in p.replicas})
    try:
        with Reassignments(cluster) as kafka:
            found = kafka.replica_sizes(brokers)
    except KMigrateError:
        return {}
    sizes: dict[tuple[str, int], int] = {}
    for (topic, partition, _broker), size in found.items():
        if (topic, partition) in wanted:
            sizes[(topic, partition)] = max(size, sizes.get((topic, partition), 0))
    return sizes


def average_record_size(
    cluster: ClusterConfig, topics: list[TopicInfo], low: Offsets, high: Offsets
) -> float:
    """Average bytes of key, value and headers of the newest records of the largest
    partition of (at most) the SAMPLE_TOPICS largest ``topics``; 0.0 if none could be
    read (a topic the principal may not read is skipped)."""
    biggest = [max(_keys(t), key=lambda k: high[k] - low[k]) for t in topics]
    biggest.sort(key=lambda k: (-(high[k] - low[k]), k))
    total = count = 0
    for topic, partition in biggest[:SAMPLE_TOPICS]:
        end = high[(topic, partition)]
        start = max(low[(topic, partition)], end - SAMPLE_RECORDS)
        try:
            found = read_partition(cluster, topic, partition, start, end, limit=SAMPLE_RECORDS)
        except KMigrateError:
            continue
        for r in found:
            headers = sum(len(k.encode()) + len(v or b"") for k, v in r.headers)
            total += len(r.key or b"") + len(r.value or b"") + headers
            count += 1
    return total / count if count else 0.0
