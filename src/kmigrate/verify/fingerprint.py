"""The Spark side of verification: chunk digests of both clusters in one job, and
reading back a few records where they differ.

Each task reads its offset ranges (one per partition and side) with confluent-kafka,
all ranges of a side at once (``spark.kafka_ranges``), and returns only their chunk
digests: records never become Spark rows. A record's fingerprint is XXH3-128 over its
key, value, headers in order, timestamp and timestamp type, each length-prefixed (None
and empty differ); a chunk's digest chains ``CHUNK`` fingerprints in order (see
``compare``). A range is never split between tasks, which is what makes
position-by-position chunks possible. Runs unchanged on any Spark master; the
read-back for a difference report runs on the driver.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import xxhash
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterError
from kmigrate.spark.kafka_range import OffsetRange, RangeReadError, read_range
from kmigrate.spark.kafka_ranges import RangesReader
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
    schema_ids: bool = False  # also note the schema ids keys and values carry


@dataclass(frozen=True)
class DigestResult:
    side: str
    topic: str
    partition: int
    chunks: list[Chunk]
    # (schema id, "key" or "value") -> the first offset whose key or value carries it
    schema_ids: dict[tuple[int, str], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Digests:
    chunks: dict[tuple[str, str, int], list[Chunk]]  # per (side, topic, partition)
    # per (side, topic, partition): (schema id, "key" or "value") -> its first offset
    schema_ids: dict[tuple[str, str, int], dict[tuple[int, str], int]]


def digest_ranges(tasks: Iterable[DigestTask]) -> Iterator[DigestResult]:
    """The Spark task function: the chunk digests of each range, in offset order.

    A side's ranges are read together (one consumer assigned to all their partitions),
    so a task's cost follows its bytes, not its number of ranges.
    """
    by_side: dict[str, list[DigestTask]] = {}
    for task in tasks:
        by_side.setdefault(task.side, []).append(task)
    for side, side_tasks in by_side.items():
        digests = {(t.topic, t.partition): _Digest(t) for t in side_tasks}
        reader = RangesReader(
            side_tasks[0].cluster,
            [OffsetRange(t.topic, t.partition, t.span.start, t.span.end) for t in side_tasks],
            role=f"verify:{side}",
        )
        for offsets, read in reader:
            if isinstance(read, RangeReadError):
                reader.close()
                raise read
            digest = digests[(offsets.topic, offsets.partition)]
            if digest.add(read):
                reader.stop(offsets)
        for digest in digests.values():
            yield digest.result()


class _Digest:
    """One range's chunk digests as its records arrive."""

    def __init__(self, task: DigestTask) -> None:
        self.task = task
        self.chunks: list[Chunk] = []
        self.prints: list[bytes] = []
        self.first = self.last = -1
        self.size = 0
        self.left = task.limit
        self.ids: dict[tuple[int, str], int] | None = {} if task.schema_ids else None

    def add(self, read: list[Any]) -> bool:
        """Fingerprint ``read``; True once the range's ``limit`` is reached."""
        messages = read if self.left is None else read[: self.left]
        if self.left is not None:
            self.left -= len(messages)
        prints = self.prints
        # The hot loop of verify: the fingerprint inline, no RecordView per record.
        for message in messages:
            kind, ts = message.timestamp()
            key, value = message.key(), message.value()
            headers = message.headers() or ()
            if not prints:
                self.first = message.offset()
            prints.append(fingerprint(key, value, headers, ts, _TS_TYPE.get(kind, -1)))
            self.size += (len(key) if key else 0) + (len(value) if value else 0)
            if len(prints) == CHUNK:
                self.last = message.offset()
                self.chunks.append(
                    _chunk(len(self.chunks), self.first, self.last, prints, self.size)
                )
                prints.clear()
                self.size = 0
        if messages:
            self.last = messages[-1].offset()
            if self.ids is not None:
                self._note_ids(messages)
        return self.left == 0

    def _note_ids(self, messages: list[Any]) -> None:
        """The first offset of each schema id a key or value carries (``framed_id``,
        inlined: verify reads every record once, and this runs for each)."""
        ids = self.ids
        assert ids is not None
        for message in messages:
            for part, data in (("value", message.value()), ("key", message.key())):
                if data and data[0] == 0 and len(data) >= 5:
                    found = (int.from_bytes(data[1:5], "big"), part)
                    if found not in ids:
                        ids[found] = message.offset()

    def result(self) -> DigestResult:
        if self.prints:
            last = _chunk(len(self.chunks), self.first, self.last, self.prints, self.size)
            self.chunks.append(last)
            self.prints = []
        task = self.task
        return DigestResult(task.side, task.topic, task.partition, self.chunks, self.ids or {})


def _chunk(index: int, first: int, last: int, prints: list[bytes], size: int) -> Chunk:
    digest = hashlib.blake2b(b"".join(prints), digest_size=16).digest()
    return Chunk(index, first, last, len(prints), size, digest)


def chunk_digests(
    spark: SparkContext | None,
    sides: Mapping[str, tuple[ClusterConfig, Mapping[TopicPartition, Span]]],
    limits: Mapping[tuple[str, str, int], int] | None = None,
    schema_ids: Collection[str] = (),
) -> Digests:
    """Chunk digests per (side, topic, partition), every side in one Spark job (without
    ``spark``, in this process: the same task function over the same items).

    ``limits`` caps the records read on a (side, topic, partition); on the sides named in
    ``schema_ids`` the same pass notes the schema ids records carry.
    """
    limits = limits or {}
    tasks = [
        DigestTask(
            side,
            cluster.as_librdkafka(),
            tp[0],
            tp[1],
            span,
            limits.get((side, *tp)),
            side in schema_ids,
        )
        for side, (cluster, spans) in sides.items()
        for tp, span in spans.items()
        if span.size > 0
    ]
    sizes = [t.span.size if t.limit is None else min(t.limit, t.span.size) for t in tasks]
    if spark is None:
        try:
            results = list(digest_ranges(tasks))
        except RangeReadError as exc:  # in a Spark task it fails the job, as any error
            raise ClusterError(f"verify could not read a range: {exc}") from None
    else:
        results = run_tasks(spark, digest_ranges, tasks, sizes, description="kmigrate verify")
    return Digests(
        {(r.side, r.topic, r.partition): r.chunks for r in results},
        {(r.side, r.topic, r.partition): r.schema_ids for r in results if r.schema_ids},
    )


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
