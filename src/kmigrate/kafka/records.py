"""Small, exact reads and writes of records outside Spark (demo, checks, tests).

Not the mirror's data path: that runs on Spark. These helpers favour certainty
over speed: produce waits for every delivery report; read returns exactly the
requested offset range of one partition or fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError, KafkaException, TopicPartition

from kmigrate.config import ClusterConfig
from kmigrate.errors import KafkaOperationError
from kmigrate.kafka.clients import ErrorTrap, consumer, producer
from kmigrate.kafka.errors import translate
from kmigrate.kafka.retry import SHOWN_POLL_S, is_transient
from kmigrate.model.records import Record


def produce(
    cluster: ClusterConfig, topic: str, records: Iterable[Record], **producer_config: object
) -> list[Record]:
    """Write ``records`` (each to its ``partition``, or by key) with acks=all and idempotence;
    returns them with the partition and offset the broker assigned, in send order."""
    trap = ErrorTrap()
    client = producer(
        cluster,
        trap,
        **{"acks": "all", "enable.idempotence": True, "linger.ms": 5, **producer_config},
    )
    results: list[Record | None] = []
    failures: list[KafkaError] = []

    def on_delivery(index: int, record: Record) -> Callable[[KafkaError | None, Any], None]:
        def report(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error)
                return
            results[index] = Record(
                record.key,
                record.value,
                record.headers,
                message.timestamp()[1],
                message.partition(),
                message.offset(),
            )

        return report

    for index, record in enumerate(records):
        results.append(None)
        kwargs: dict[str, object] = {
            "key": record.key,
            "value": record.value,
            "headers": list(record.headers) or None,
            "on_delivery": on_delivery(index, record),
        }
        if record.partition is not None:
            kwargs["partition"] = record.partition
        if record.timestamp is not None:
            kwargs["timestamp"] = record.timestamp
        _produce_one(client, topic, kwargs)
    remaining = client.flush(cluster.timeout_s * 3)
    if failures or remaining:
        cause = failures[0] if failures else KafkaError(KafkaError._TIMED_OUT)
        raise translate(KafkaException(cause), cluster, trap, f"produce to {topic}", topic=topic)
    return [r for r in results if r is not None]


def _produce_one(client: Any, topic: str, kwargs: dict[str, object]) -> None:
    while True:
        try:
            client.produce(topic, **kwargs)
            return
        except BufferError:
            client.poll(0.1)


def read_partition(
    cluster: ClusterConfig,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    timeout: float | None = None,
    limit: int | None = None,
) -> list[Record]:
    """Every record with start <= offset < end (read_committed), in offset order
    (only the first ``limit`` of them when given).

    Records already deleted (below the log start) are simply absent. Offsets may
    have gaps (compaction, transaction markers); the read stops at the first record
    at or past ``end`` or at the partition's end. It never jumps: an offset reset
    is an error, not a silent skip.
    """
    trap = ErrorTrap()
    settings = {
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        # the end is usually known (the last offset below the high watermark): an empty
        # fetch that only says "end of partition" should not wait the default 500 ms
        "fetch.wait.max.ms": 50,
    }
    client = consumer(cluster, trap, **settings)
    deadline = time.monotonic() + (timeout or cluster.timeout_s * 3)
    records: list[Record] = []
    try:
        low, high = _watermarks(client, TopicPartition(topic, partition), cluster, deadline)
        start = max(start, low)
        stop = min(end, high)
        if start >= stop:
            return records
        client.assign([TopicPartition(topic, partition, start)])
        while start < end:
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"reading {topic}[{partition}] offsets {start}..{end} on cluster "
                    f"'{cluster.name}' timed out after {len(records)} record(s)"
                )
            message = client.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise translate(
                    KafkaException(message.error()), cluster, trap, f"read {topic}", topic=topic
                )
            if message.offset() >= end:
                break
            records.append(_record(message))
            if limit is not None and len(records) >= limit:
                break
            if message.offset() >= stop - 1:
                break  # the last offset wanted: no need to wait for end-of-partition
    finally:
        client.close()
    return records


def _record(message: Any) -> Record:
    kind, ts = message.timestamp()
    headers = tuple(message.headers() or ())
    return Record(
        message.key(),
        message.value(),
        headers,
        None if kind == TIMESTAMP_NOT_AVAILABLE else ts,
        message.partition(),
        message.offset(),
    )


def _watermarks(
    client: Any, tp: TopicPartition, cluster: ClusterConfig, deadline: float
) -> tuple[int, int]:
    """The partition's low and high watermarks, asked again while the answer is a
    passing condition (right after a broker roll or a leader election the broker asked
    answers NOT_LEADER_FOR_PARTITION until the client's metadata catches up)."""
    while True:
        try:
            low, high = client.get_watermark_offsets(tp, timeout=cluster.timeout_s)
            return int(low), int(high)
        except KafkaException as exc:
            if not is_transient(exc.args[0]) or time.monotonic() > deadline:
                raise
        time.sleep(SHOWN_POLL_S)
