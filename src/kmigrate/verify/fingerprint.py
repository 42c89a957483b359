"""The Spark side of verification: chunk digests of both clusters in one job, and
reading back a few records where they differ.

Each record's fingerprint is computed in the JVM (two xxHash64 over key, value, headers
in order, timestamp, timestamp type and null flags, with the arguments in different
orders), so only four small columns cross into Python, where ``mapInArrow`` chains
them into chunk digests (see ``compare``). Spark's Kafka source gives one Spark
partition per Kafka partition, read in offset order (no minPartitions), which is what
makes position-by-position chunks possible. Runs unchanged on any Spark master.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kmigrate.config import ClusterConfig
from kmigrate.mirror.batch import SELECT
from kmigrate.spark.kafka_source import kafka_reader
from kmigrate.verify.compare import CHUNK, Chunk, RecordView
from kmigrate.verify.ranges import Span

TopicPartition = tuple[str, int]

_FIELDS = ("key", "value", "headers", "ts", "timestampType", "key_null", "value_null")
CHUNK_DDL = (
    "side string, topic string, partition int, chunk long, first_offset long, "
    "last_offset long, records long, bytes long, digest binary"
)


def read_spans(
    spark: SparkSession, cluster: ClusterConfig, spans: Mapping[TopicPartition, Span]
) -> DataFrame:
    """Every record in ``spans`` (read_committed, headers included) with its fingerprint."""
    starting = {tp: span.start for tp, span in spans.items()}
    ending = {tp: span.end for tp, span in spans.items()}
    frame = (
        kafka_reader(spark.read, cluster, spans, starting, ending)
        .load()
        .selectExpr(
            *SELECT,
            "timestampType",
            "key IS NULL AS key_null",
            "value IS NULL AS value_null",
        )
    )
    return frame.withColumns(
        {
            "h1": F.xxhash64(*_FIELDS),
            "h2": F.xxhash64(F.lit("kmigrate-verify"), *reversed(_FIELDS)),
            "size": F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0)),
        }
    )


def chunk_digests(
    spark: SparkSession,
    sides: Mapping[str, tuple[ClusterConfig, Mapping[TopicPartition, Span]]],
) -> dict[tuple[str, str, int], list[Chunk]]:
    """Chunk digests per (side, topic, partition), both sides in one Spark job."""
    frames = [
        read_spans(spark, cluster, spans)
        .select("topic", "partition", "offset", "h1", "h2", "size")
        .withColumn("side", F.lit(side))
        for side, (cluster, spans) in sides.items()
        if spans
    ]
    if not frames:
        return {}
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    result: dict[tuple[str, str, int], list[Chunk]] = {}
    for row in union.mapInArrow(_digest_chunks, CHUNK_DDL).collect():
        result.setdefault((row.side, row.topic, row.partition), []).append(
            Chunk(
                row.chunk,
                row.first_offset,
                row.last_offset,
                row.records,
                row.bytes,
                bytes(row.digest),
            )
        )
    for chunks in result.values():
        chunks.sort(key=lambda c: c.index)
    return result


def _digest_chunks(batches: Iterable[Any]) -> Iterator[Any]:
    """Executor side: fingerprints in offset order -> one row per chunk of CHUNK records.

    A Spark partition holds one Kafka partition of one side; the key columns are checked
    per batch anyway, so a split partition would fail loudly instead of mis-chunking.
    """
    key: tuple[str, str, int] | None = None
    chunk = 0
    hasher = hashlib.blake2b(digest_size=16)
    count = size = 0
    first = last = -1
    rows: dict[str, list[Any]] = {name: [] for name in _ROW}

    def emit() -> None:
        nonlocal chunk, hasher, count, size
        assert key is not None
        for name, value in zip(
            _ROW, (*key, chunk, first, last, count, size, hasher.digest()), strict=True
        ):
            rows[name].append(value)
        chunk += 1
        hasher = hashlib.blake2b(digest_size=16)
        count = size = 0

    for batch in batches:
        if batch.num_rows == 0:
            continue
        sides = pc.unique(batch.column("side"))
        topics = pc.unique(batch.column("topic"))
        partitions = pc.unique(batch.column("partition"))
        if len(sides) != 1 or len(topics) != 1 or len(partitions) != 1:
            raise RuntimeError("a Spark partition holds more than one Kafka partition")
        batch_key = (sides[0].as_py(), topics[0].as_py(), partitions[0].as_py())
        if key is not None and batch_key != key:
            raise RuntimeError("a Spark partition holds more than one Kafka partition")
        key = batch_key
        offsets = batch.column("offset").to_numpy()
        prints = np.stack(
            [batch.column("h1").to_numpy(), batch.column("h2").to_numpy()], axis=1
        ).astype("<i8")
        sizes = batch.column("size").to_numpy()
        pos, n = 0, batch.num_rows
        while pos < n:
            take = min(CHUNK - count, n - pos)
            if count == 0:
                first = int(offsets[pos])
            hasher.update(prints[pos : pos + take].tobytes())
            size += int(sizes[pos : pos + take].sum())
            count += take
            last = int(offsets[pos + take - 1])
            pos += take
            if count == CHUNK:
                emit()
        if rows["side"]:
            yield pa.RecordBatch.from_pydict(rows, schema=_SCHEMA)
            rows = {name: [] for name in _ROW}
    if count:
        emit()
        yield pa.RecordBatch.from_pydict(rows, schema=_SCHEMA)


_ROW = (
    "side",
    "topic",
    "partition",
    "chunk",
    "first_offset",
    "last_offset",
    "records",
    "bytes",
    "digest",
)
_SCHEMA = pa.schema(
    [
        ("side", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("chunk", pa.int64()),
        ("first_offset", pa.int64()),
        ("last_offset", pa.int64()),
        ("records", pa.int64()),
        ("bytes", pa.int64()),
        ("digest", pa.binary()),
    ]
)


def read_records(
    spark: SparkSession,
    cluster: ClusterConfig,
    topic: str,
    partition: int,
    span: Span,
    limit: int,
) -> list[RecordView]:
    """The first ``limit`` records of ``span``, with the same fingerprints as the digests."""
    if span.size <= 0:
        return []
    rows = (
        read_spans(spark, cluster, {(topic, partition): span})
        .select("offset", "key", "value", "headers", "ts", "timestampType", "h1", "h2")
        .limit(limit)
        .collect()
    )
    return [
        RecordView(
            r.offset,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers or ()),
            r.ts,
            r.timestampType,
            (r.h1, r.h2),
        )
        for r in sorted(rows, key=lambda r: r.offset)
    ]
