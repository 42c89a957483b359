"""The Spark Structured Streaming query of a mirror: Kafka source in, our writer out.

Every query starts at the read positions of the offset map and uses a fresh
checkpoint: the store, not Spark's checkpoint, says what was mirrored (positional
resume), so a lost or stale checkpoint can never make the mirror skip or repeat.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from kmigrate.config import ClusterConfig
from kmigrate.mirror.batch import MirrorContext, run_batch
from kmigrate.mirror.topology import Assignment
from kmigrate.spark.kafka_source import kafka_reader


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
    pairs = list(assignment.pairs())
    starting = {tp: ctx.states[tp].map.source_next for tp in pairs}
    reader = kafka_reader(spark.readStream, source, pairs, starting)
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return (
        reader.load()
        .writeStream.queryName(f"kmigrate-mirror-{ctx.link.name}")
        .foreachBatch(lambda df, batch_id: run_batch(ctx, df, batch_id))
        .option("checkpointLocation", str(ctx.checkpoint))
        .start()
    )
