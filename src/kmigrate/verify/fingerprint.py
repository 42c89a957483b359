"""The Spark side of verification: chunk digests of both clusters in one job, and
reading back a few records where they differ.

Each task reads one offset range of one partition on one side with confluent-kafka
(``spark.kafka_range``) and returns only its chunk digests: records never become Spark
rows. A record's fingerprint is XXH3-128 over its key, value, headers in order,
timestamp and timestamp type, each length-prefixed (None and empty differ); a chunk's
digest chains ``CHUNK`` fingerprints in order (see ``compare``). One task per range,
never split, is what makes position-by-position chunks possible. Runs unchanged on any
Spark master; the read-back for a difference report runs on the driver.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import xxhash
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

from kmigrate.config import ClusterConfig
from kmigrate.spark.kafka_range import OffsetRange, read_range
from kmigrate.spark.tasks import run_tasks
from kmigrate.verify.compare import CHUNK, Chunk, RecordView
from kmigrate.verify.ranges import Span

if TYPE_CHECKING:
    from pyspark import SparkContext

TopicPartition = tuple[str, int]

_RECORD = struct.Struct("<qqqbi")  # key length, value length, timestamp, type, headers
_HEADER = struct.Struct("<iq")  # name length, value length (-1: None)
# Kafka's own numbering of timestamp types (confluent-kafka numbers them differently).
_TS_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


def fingerprint(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    timestamp: int,
    timestamp_type: int,
) -> bytes:
    """16 bytes that differ, short of a 2^-128-scale accident, when any field differs."""
    head = _RECORD.pack(
        -1 if key is None else len(key),
        -1 if value is None else len(value),
        timestamp,
        timestamp_type,
        len(headers),
    )
    if not headers:
        return xxhash.xxh3_128_digest(b"".join((head, key or b"", value or b"")))
    parts = [head, key or b"", value or b""]
    for name, data in headers:
        encoded = name.encode()
        size = -1 if data is None else len(data)
        parts += (_HEADER.pack(len(encoded), size), encoded, data or b"")
    return xxhash.xxh3_128_digest(b"".join(parts))


def message_view(message: Any) -> RecordView:
    """A confluent-kafka message as verify sees it (Kafka's timestamp type numbers)."""
    kind, ts = message.timestamp()
    key, value = message.key(), message.value()
    headers = tuple(message.headers() or ())
    ts_type = _TS_TYPE.get(kind, -1)
    return RecordView(
        message.offset(),
        key,
        value,
        headers,
        ts,
        ts_type,
        fingerprint(key, value, headers, ts, ts_type),
    )


@dataclass(frozen=True)
class DigestTask:
    """One side's range of one partition; ``limit`` caps the records read (None: all)."""

    side: str
    cluster: dict[str, Any]  # librdkafka config (secrets included)
    topic: str
    partition: int
    span: Span
    limit: int | None = None


@dataclass(frozen=True)
class DigestResult:
    side: str
    topic: str
    partition: int
    chunks: list[Chunk]


def digest_ranges(tasks: Iterable[DigestTask]) -> Iterator[DigestResult]:
    """The Spark task function: the chunk digests of each range, in offset order."""
    for task in tasks:
        yield DigestResult(task.side, task.topic, task.partition, _digest(task))


def _digest(task: DigestTask) -> list[Chunk]:
    chunks: list[Chunk] = []
    prints: list[bytes] = []
    first = last = -1
    size = 0
    left = task.limit
    offsets = OffsetRange(task.topic, task.partition, task.span.start, task.span.end)
    reader = read_range(task.cluster, offsets)
    try:
        for read in reader:
            messages = read if left is None else read[:left]
            if left is not None:
                left -= len(messages)
            # The hot loop of verify: the fingerprint inline, no RecordView per record.
            for message in messages:
                kind, ts = message.timestamp()
                key, value = message.key(), message.value()
                headers = message.headers() or ()
                if not prints:
                    first = message.offset()
                prints.append(fingerprint(key, value, headers, ts, _TS_TYPE.get(kind, -1)))
                size += (len(key) if key else 0) + (len(value) if value else 0)
                if len(prints) == CHUNK:
                    last = message.offset()
                    chunks.append(_chunk(len(chunks), first, last, prints, size))
                    prints, size = [], 0
            if messages:
                last = messages[-1].offset()
            if left == 0:
                break
    finally:
        reader.close()
    if prints:
        chunks.append(_chunk(len(chunks), first, last, prints, size))
    return chunks


def _chunk(index: int, first: int, last: int, prints: list[bytes], size: int) -> Chunk:
    digest = hashlib.blake2b(b"".join(prints), digest_size=16).digest()
    return Chunk(index, first, last, len(prints), size, digest)


def chunk_digests(
    spark: SparkContext,
    sides: Mapping[str, tuple[ClusterConfig, Mapping[TopicPartition, Span]]],
    limits: Mapping[tuple[str, str, int], int] | None = None,
) -> dict[tuple[str, str, int], list[Chunk]]:
    """Chunk digests per (side, topic, partition), every side in one Spark job.

    ``limits`` caps the records read on a (side, topic, partition).
    """
    limits = limits or {}
    tasks = [
        DigestTask(side, cluster.as_librdkafka(), tp[0], tp[1], span, limits.get((side, *tp)))
        for side, (cluster, spans) in sides.items()
        for tp, span in spans.items()
        if span.size > 0
    ]
    sizes = [t.span.size if t.limit is None else min(t.limit, t.span.size) for t in tasks]
    results = run_tasks(spark, digest_ranges, tasks, sizes, description="kmigrate verify")
    return {(r.side, r.topic, r.partition): r.chunks for r in results}


def read_records(
    cluster: ClusterConfig, topic: str, partition: int, span: Span, limit: int
) -> list[RecordView]:
    """The first ``limit`` records of ``span`` (driver side), fingerprinted as the digests."""
    if span.size <= 0 or limit <= 0:
        return []
    found: list[RecordView] = []
    offsets = OffsetRange(topic, partition, span.start, span.end)
    reader = read_range(cluster.as_librdkafka(), offsets)
    try:
        for messages in reader:
            found.extend(message_view(m) for m in messages[: limit - len(found)])
            if len(found) >= limit:
                break
    finally:
        reader.close()
    return found
