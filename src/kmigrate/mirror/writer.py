"""The executor side of the mirror: write one batch of source records to the target.

Runs inside Spark's ``mapInArrow`` on executors, one task per source partition, with
nothing but what the driver put into its ``WritePlan`` (no store, no driver disk).
For each partition it

1. skips records the offset map already holds (source offset < ``source_next``);
2. if the target partition is ahead of where the map says it should end, reads those
   target records back and accepts them only if they equal, in order, the next
   records of this batch (an earlier attempt wrote them and died before recording);
3. produces the rest to the same partition number with key, value, headers and
   timestamp, idempotent with acks=all, and turns delivery reports into offset runs.

It never raises for a data problem: it returns rows (runs, first offsets seen, one
error per failed partition) and the driver decides. Anything else that stops a task
fails the batch, and the next attempt starts again from the offset map.
"""

from __future__ import annotations

import collections
import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from kmigrate.mirror.offset_map import runs_from_deliveries

_METADATA_LAGS = {KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}

# Columns the driver selects from Spark's Kafka source before mapInArrow.
INPUT_COLUMNS = ("topic", "partition", "offset", "key", "value", "headers", "ts")

RESULT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("kind", pa.string()),  # run | seen | resumed | error
        ("source_start", pa.int64()),
        ("target_start", pa.int64()),
        ("length", pa.int64()),
        ("last_timestamp", pa.int64()),
        ("code", pa.string()),
        ("message", pa.string()),
    ]
)
RESULT_DDL = (
    "topic string, partition int, kind string, source_start long, target_start long, "
    "length long, last_timestamp long, code string, message string"
)


@dataclass(frozen=True)
class PartitionPlan:
    """What the driver knows about one target partition before the batch."""

    source_next: int  # first source offset not yet in the map
    expected_end: int  # where the target ends if only the mirror wrote to it
    actual_end: int  # where it ends now (the driver asked just before the batch)


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs; pickled to executors with the function."""

    target: dict[str, Any]  # librdkafka config of the target cluster (secrets included)
    partitions: dict[tuple[str, int], PartitionPlan]
    producer: dict[str, Any] = field(default_factory=dict)
    flush_timeout_s: float = 300.0

    def producer_config(self) -> dict[str, Any]:
        return {
            **self.target,
            "acks": "all",
            "enable.idempotence": True,
            # A failed record must fail every later one: no gap may hide in a run.
            "enable.gapless.guarantee": True,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "message.max.bytes": 100 * 1024 * 1024,
            "queue.buffering.max.messages": 1_000_000,
            **self.producer,
        }


class _Record:
    __slots__ = ("headers", "key", "offset", "ts", "value")

    def __init__(self, offset: int, key: Any, value: Any, headers: Any, ts: int) -> None:
        self.offset, self.key, self.value, self.headers, self.ts = offset, key, value, headers, ts


@dataclass
class _Partition:
    """One partition's progress inside a task."""

    topic: str
    partition: int
    plan: PartitionPlan
    first_seen: int | None = None
    seen: int = 0
    verified: list[tuple[int, int]] = field(default_factory=list)  # (source, target) found
    sent: collections.deque[int] = field(default_factory=collections.deque)
    delivered: list[tuple[int, int]] = field(default_factory=list)
    last_timestamp: int | None = None
    error: tuple[str, str] | None = None
    reader: Consumer | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def to_verify(self) -> int:
        return self.plan.actual_end - self.plan.expected_end - len(self.verified)

    def fail(self, code: str, message: str) -> None:
        if self.error is None:
            self.error = (code, message)


class _Task:
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan
        self.parts: dict[tuple[str, int], _Partition] = {}
        self.config = plan.producer_config()
        self.key = _config_key(self.config)
        self.producer = _cached_producer(self.key, self.config)
        self.producer_failed: str | None = None

    def on_delivery(self, error: KafkaError | None, message: Any) -> None:
        part = self.parts.get((message.topic(), message.partition()))
        if part is None or not part.sent:
            return
        source = part.sent.popleft()
        if error is not None:
            part.fail("kafka", f"producing to {part.topic}[{part.partition}] failed: {error.str()}")
            if error.fatal():
                self.producer_failed = error.str()
            return
        if part.error is None:
            part.delivered.append((source, message.offset()))

    def part(self, topic: str, partition: int) -> _Partition:
        key = (topic, partition)
        part = self.parts.get(key)
        if part is None:
            plan = self.plan.partitions.get(key)
            if plan is None:
                # Spark handed us a partition the driver did not plan: refuse to guess.
                plan = PartitionPlan(0, 0, 0)
                part = _Partition(topic, partition, plan)
                part.fail("internal", f"{topic}[{partition}] was not planned for this batch")
            else:
                part = _Partition(topic, partition, plan)
                if plan.actual_end < plan.expected_end:
                    part.fail("foreign-write", _behind(part))
            self.parts[key] = part
        return part

    def handle(self, topic: str, partition: int, record: _Record) -> None:
        part = self.part(topic, partition)
        if record.offset < part.plan.source_next or part.error is not None:
            return
        if part.first_seen is None:
            part.first_seen = record.offset
        part.seen += 1
        if part.to_verify > 0:
            self.verify(part, record)
            return
        self.send(part, record)

    def verify(self, part: _Partition, record: _Record) -> None:
        """The target holds records the map does not know: they must be this batch's next."""
        target_offset = part.plan.expected_end + len(part.verified)
        if part.reader is None:
            part.reader = _reader(self.plan.target, part.topic, part.partition, target_offset)
        found = _next_message(part.reader, self.plan.flush_timeout_s)
        if found is None or found.offset() != target_offset or not _same(found, record):
            part.fail("foreign-write", _foreign(part, target_offset, record.offset))
            return
        part.verified.append((record.offset, target_offset))
        part.last_timestamp = record.ts
        if part.to_verify == 0:
            part.reader.close()
            part.reader = None

    def send(self, part: _Partition, record: _Record) -> None:
        part.sent.append(record.offset)
        kwargs: dict[str, Any] = {
            "partition": part.partition,
            "key": record.key,
            "value": record.value,
            "timestamp": record.ts,
        }
        if record.headers:
            kwargs["headers"] = [(h["key"], h["value"]) for h in record.headers]
        deadline = time.monotonic() + self.plan.flush_timeout_s
        while True:
            try:
                self.producer.produce(part.topic, **kwargs)
                break
            except BufferError:
                self.producer.poll(0.05)
            except KafkaException as exc:
                code = exc.args[0].code() if exc.args else None
                if code in _METADATA_LAGS and time.monotonic() < deadline:
                    # A partition just added: this cached producer has not seen it yet.
                    self.producer.list_topics(part.topic, timeout=5)
                    continue
                part.sent.pop()
                part.fail("kafka", f"producing to {part.topic}[{part.partition}] failed: {exc}")
                return
        part.last_timestamp = record.ts
        self.producer.poll(0)

    def finish(self) -> list[dict[str, Any]]:
        remaining = self.producer.flush(self.plan.flush_timeout_s)
        rows: list[dict[str, Any]] = []
        for part in self.parts.values():
            if part.reader is not None:
                # The batch ended before every extra target record was matched: the
                # rest are checked against the next batch's records.
                part.reader.close()
            if remaining and part.sent and part.error is None:
                part.fail(
                    "kafka",
                    f"{len(part.sent)} record(s) to {part.topic}[{part.partition}] "
                    f"were not acknowledged within {self.plan.flush_timeout_s:g}s",
                )
            rows.extend(_rows(part))
        if self.producer_failed:
            _PRODUCERS.pop(self.key, None)
        return rows


def _rows(part: _Partition) -> list[dict[str, Any]]:
    base = {"topic": part.topic, "partition": part.partition}
    rows = []
    pairs = part.verified + part.delivered
    expected = part.plan.expected_end
    accepted: list[tuple[int, int]] = []
    for source, target in pairs:
        accepted.append((source, target))
        if target != expected and part.error is None:
            # Someone else's record took the offset ours should have had.
            part.fail("foreign-write", _foreign(part, expected, source))
        expected = target + 1
    for run in runs_from_deliveries(accepted):
        rows.append(
            {
                **base,
                "kind": "run",
                "source_start": run.source_start,
                "target_start": run.target_start,
                "length": run.length,
            }
        )
    if part.first_seen is not None:
        rows.append(
            {
                **base,
                "kind": "seen",
                "source_start": part.first_seen,
                "length": part.seen,
                "last_timestamp": part.last_timestamp,
            }
        )
    if part.verified:
        rows.append({**base, "kind": "resumed", "length": len(part.verified)})
    if part.error is not None:
        code, message = part.error
        rows.append({**base, "kind": "error", "code": code, "message": message})
    return rows


def _behind(part: _Partition) -> str:
    return (
        f"target partition {part.topic}[{part.partition}] ends at offset {part.plan.actual_end} "
        f"but the mirror wrote up to {part.plan.expected_end}: records were deleted from it "
        "or the topic was recreated"
    )


def _foreign(part: _Partition, target_offset: int, source_offset: int) -> str:
    return (
        f"target partition {part.topic}[{part.partition}] was written by something other than "
        f"the mirror: the record at target offset {target_offset} is not the copy of source "
        f"offset {source_offset}; "
        "stop that writer (a mirror topic has one writer until promoted)"
    )


def _same(message: Any, record: _Record) -> bool:
    headers = [(h["key"], h["value"]) for h in record.headers or ()]
    if message.key() != record.key or message.value() != record.value:
        return False
    if list(message.headers() or ()) != headers:
        return False
    kind, ts = message.timestamp()
    return bool(kind != TIMESTAMP_CREATE_TIME or ts == record.ts)


def _reader(target: dict[str, Any], topic: str, partition: int, offset: int) -> Consumer:
    consumer = Consumer(
        {
            **target,
            "group.id": "kmigrate-mirror-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, partition, offset)])
    return consumer


def _next_message(consumer: Consumer, timeout_s: float) -> Any | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            return None
        return message
    return None


# One producer per executor Python worker and target config, reused across tasks:
# connecting and initialising idempotence per batch would dominate small batches.
_PRODUCERS: dict[str, Producer] = {}
_ROUTES: dict[str, _Task] = {}


def _config_key(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def _cached_producer(key: str, config: dict[str, Any]) -> Producer:
    producer = _PRODUCERS.get(key)
    if producer is None:
        producer = Producer({**config, "on_delivery": lambda err, msg: _route(key, err, msg)})
        _PRODUCERS[key] = producer
    return producer


def _route(key: str, error: KafkaError | None, message: Any) -> None:
    task = _ROUTES.get(key)
    if task is not None:
        task.on_delivery(error, message)


def write_batches(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: consume one task's records, yield its result rows."""
    task = _Task(plan)
    _ROUTES[task.key] = task
    try:
        for batch in batches:
            columns = {name: batch.column(name).to_pylist() for name in INPUT_COLUMNS}
            for i in range(batch.num_rows):
                task.handle(
                    columns["topic"][i],
                    columns["partition"][i],
                    _Record(
                        columns["offset"][i],
                        columns["key"][i],
                        columns["value"][i],
                        columns["headers"][i],
                        columns["ts"][i],
                    ),
                )
        rows = task.finish()
    finally:
        _ROUTES.pop(task.key, None)
    yield pa.RecordBatch.from_pylist(rows, schema=RESULT_SCHEMA)
