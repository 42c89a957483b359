"""The Spark Structured Streaming query of a mirror: Kafka source in, our writer out.

Every query starts at the read positions of the offset map and uses a fresh
checkpoint: the store, not Spark's checkpoint, says what was mirrored (positional
resume), so a lost or stale checkpoint can never make the mirror skip or repeat.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from kmigrate.config import ClusterConfig
from kmigrate.mirror.batch import MirrorContext, run_batch
from kmigrate.mirror.topology import Assignment

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


def start_query(
    spark: SparkSession,
    source: ClusterConfig,
    ctx: MirrorContext,
    assignment: Assignment,
    *,
    checkpoints: Path,
    max_offsets_per_trigger: int | None = None,
) -> StreamingQuery:
    """Start reading ``assignment`` from the map's read positions; one Spark partition per
    Kafka partition (no minPartitions), in offset order, read_committed."""
    shutil.rmtree(checkpoints, ignore_errors=True)
    checkpoints.mkdir(parents=True)
    ctx.checkpoint = checkpoints / uuid.uuid4().hex
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    for topic, partition in assignment.pairs():
        assign.setdefault(topic, []).append(partition)
        starting.setdefault(topic, {})[str(partition)] = ctx.states[
            (topic, partition)
        ].map.source_next
    reader = (
        spark.readStream.format("kafka")
        .options(**source.as_spark_options())
        .option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(starting))
        .option("kafka.isolation.level", "read_committed")
        .option("includeHeaders", "true")
        # Loss is detected and named by the mirror itself (batch._check_retention).
        .option("failOnDataLoss", "false")
        .options(**FETCH_OPTIONS)
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return (
        reader.load()
        .writeStream.queryName(f"kmigrate-mirror-{ctx.link.name}")
        .foreachBatch(lambda df, batch_id: run_batch(ctx, df, batch_id))
        .option("checkpointLocation", str(ctx.checkpoint))
        .start()
    )
