"""RangesReader: many partitions' ranges read at once by the worker's cached consumer."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer

from harness.helpers import unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.spark.kafka_range import OffsetRange, RangeReadError, read_range
from kmigrate.spark.kafka_ranges import RangesReader
from tests.integration.conftest import Clusters


def _topic(clusters: Clusters, partitions: int, records: int) -> str:
    with ClusterAdmin(clusters.source) as admin:
        name = admin.create_topic(unique("ranges"), partitions).name
    producer = Producer({"bootstrap.servers": clusters.source.bootstrap_servers})
    for p in range(partitions):
        for i in range(records):
            producer.produce(name, b"%d" % i, partition=p)
    assert producer.flush(30) == 0
    return name


def _read(reader: RangesReader, stop_at: int | None = None) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for offsets, read in reader:
        assert not isinstance(read, RangeReadError), read
        got = found.setdefault(offsets.partition, [])
        got.extend(m.offset() for m in read)
        if stop_at is not None and len(got) >= stop_at:
            reader.stop(offsets)
    return found


def test_ranges_of_many_partitions_read_exactly_and_again_by_the_next_reader(
    clusters: Clusters,
) -> None:
    """Each range yields exactly its offsets, in order; ranges stopped early or finished
    (their partitions paused) are read in full by the next reader of the same cached
    consumer, and by a single-range read after it."""
    topic = _topic(clusters, 6, 40)
    config = clusters.source.as_librdkafka()
    ranges = [OffsetRange(topic, p, p, 40 - p) for p in range(6)]
    first = _read(RangesReader(config, ranges, stall_timeout_s=30))
    assert first == {p: list(range(p, 40 - p)) for p in range(6)}

    stopped = _read(RangesReader(config, ranges, stall_timeout_s=30), stop_at=5)
    assert all(got[:5] == list(range(p, p + 5)) for p, got in stopped.items()), stopped

    again = _read(RangesReader(config, ranges, stall_timeout_s=30))
    assert again == first, "a partition paused by the reader before stayed paused"
    single: list[Any] = [
        m.offset()
        for batch in read_range(config, OffsetRange(topic, 3, 0, 40), stall_timeout_s=30)
        for m in batch
    ]
    assert single == list(range(40))


def test_a_range_past_the_end_of_its_partition_stalls_and_is_reported_alone(
    clusters: Clusters,
) -> None:
    """A range that cannot be completed (its end lies beyond the partition's end) is
    reported as transiently unavailable once nothing progressed for the stall time;
    the complete ranges are yielded in full first."""
    topic = _topic(clusters, 2, 10)
    config = clusters.source.as_librdkafka()
    reader = RangesReader(
        config, [OffsetRange(topic, 0, 0, 10), OffsetRange(topic, 1, 0, 15)], stall_timeout_s=2
    )
    records: dict[int, list[int]] = {}
    failures = {}
    for offsets, read in reader:
        if isinstance(read, RangeReadError):
            failures[offsets.partition] = read
        else:
            records.setdefault(offsets.partition, []).extend(m.offset() for m in read)
    assert records == {0: list(range(10)), 1: list(range(10))}
    assert list(failures) == [1] and failures[1].transient, failures
