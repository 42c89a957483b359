"""How kmigrate reads Kafka with Spark's connector, for the mirror (streaming) and
verify (batch) alike: explicit partitions and offsets, read_committed, headers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TypeVar

from pyspark.sql.readwriter import DataFrameReader
from pyspark.sql.streaming import DataStreamReader

from kmigrate.config import ClusterConfig

Reader = TypeVar("Reader", DataFrameReader, DataStreamReader)

# Spark's Kafka reader asks the broker for the partition's log start and end after
# every poll (two ListOffsets round trips). With the consumer's default of 500 records
# per poll that bounded the mirror to about 40k records/s on small records (measured
# with jstack, see bench/README); bigger polls make those round trips rare. The fetch
# sizes bound the memory per task (one consumer per partition).
FETCH_OPTIONS = {
    "kafka.max.poll.records": "20000",
    "kafka.max.partition.fetch.bytes": str(8 * 1024 * 1024),
    "kafka.fetch.max.bytes": str(64 * 1024 * 1024),
}


def _per_topic(offsets: Mapping[tuple[str, int], int]) -> str:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(out)


def kafka_reader(
    reader: Reader,
    cluster: ClusterConfig,
    partitions: Iterable[tuple[str, int]],
    starting: Mapping[tuple[str, int], int],
    ending: Mapping[tuple[str, int], int] | None = None,
) -> Reader:
    """``reader`` set up for these partitions from ``starting`` (to ``ending``).

    One Spark partition per Kafka partition (no minPartitions), in offset order.
    ``failOnDataLoss`` is off: kmigrate finds and names lost records itself (the mirror
    from its map, verify by re-checking log starts).
    """
    assign: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        assign.setdefault(topic, []).append(partition)
    reader = (
        reader.format("kafka")
        .options(**cluster.as_spark_options())
        .option("assign", json.dumps(assign))
        .option("startingOffsets", _per_topic(starting))
        .option("kafka.isolation.level", "read_committed")
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "false")
        .options(**FETCH_OPTIONS)
    )
    if ending is not None:
        reader = reader.option("endingOffsets", _per_topic(ending))
    return reader
