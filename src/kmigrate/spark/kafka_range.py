"""How kmigrate's Spark tasks read Kafka: one offset range of one partition, with
confluent-kafka in the Python task, read_committed.

Records never become Spark rows (DESIGN.md, "Data plane"): the task reads its range
itself and hands the records to the mirror's writer or verify's hasher. One consumer
per Python worker and cluster config is kept across tasks (Spark reuses its Python
workers), so a task costs an ``assign``, not a connection and a metadata round trip.

A range ends at its planned end or at the partition's end, whichever comes first. Under
read_committed the last offsets of a range may be transaction markers or aborted
records that are never delivered, so the end is found from the consumer's position at
partition EOF, not from seeing offset ``end - 1``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kmigrate.kafka.retry import condition_of, is_transient

# Records per consume() call: big enough that the per-call cost vanishes, small enough
# that a task's memory stays bounded (librdkafka prefetches behind it).
CONSUME_BATCH = 10_000
CONSUMER_SETTINGS: dict[str, Any] = {
    "group.id": "kmigrate-range-reader",  # never joins or commits: ranges are assigned
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "isolation.level": "read_committed",
    "enable.partition.eof": True,
    # Records below the log start are gone: start at the log start and let the caller
    # notice (its first record lies past the range's start) instead of failing blindly.
    "auto.offset.reset": "earliest",
    # A fetch the broker holds open at the end of a partition delays the next task's
    # first fetch on the same connection by as long: keep the hold short.
    "fetch.wait.max.ms": 20,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 8 * 1024 * 1024,
    "queued.max.messages.kbytes": 128 * 1024,
}


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one partition; ``end`` is exclusive."""

    topic: str
    partition: int
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}] offsets {self.start}..{self.end - 1}"


class RangeReadError(Exception):
    """The range could not be read: a broker error, or no progress for too long.

    ``transient`` when the cause passes on its own (the cluster is restarting, a leader
    moving): the caller may try the range again later. ``condition`` says what, briefly.
    """

    def __init__(self, message: str, *, transient: bool, condition: str) -> None:
        super().__init__(message)
        self.transient = transient
        self.condition = condition


Client = TypeVar("Client")
_CLIENTS: dict[tuple[str, str], Any] = {}


def config_key(config: dict[str, Any]) -> str:
    """A stable key for a client config (secrets included, so it is only hashed)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def worker_client(kind: str, config: dict[str, Any], make: Callable[[], Client]) -> Client:
    """The client of this kind and config that this Python worker keeps across tasks."""
    key = (kind, config_key(config))
    client = _CLIENTS.get(key)
    if client is None:
        client = make()
        _CLIENTS[key] = client
    return client


def forget_client(kind: str, config: dict[str, Any]) -> None:
    """Drop a cached client after a fatal error; the next task makes a new one."""
    _CLIENTS.pop((kind, config_key(config)), None)


def range_consumer(cluster: dict[str, Any], role: str = "read") -> Consumer:
    """The worker's consumer for ``cluster``; one per ``role``, so that two ranges read
    at once (the mirror's source range and a read-back of its target) never share one,
    even when both names point at the same cluster."""
    config = {**cluster, **CONSUMER_SETTINGS}
    return worker_client(f"consumer:{role}", config, lambda: Consumer(config))


def read_range(
    cluster: dict[str, Any],
    offsets: OffsetRange,
    *,
    stall_timeout_s: float = 120.0,
    role: str = "read",
) -> Generator[list[Any], None, None]:
    """The records of ``offsets`` in offset order, in lists of up to CONSUME_BATCH.

    Offsets may have gaps (compaction, markers, aborted records). Stops at the first
    record at or past ``end``, or at partition EOF once the position reached ``end``.
    A caller may stop early (close the generator). Raises RangeReadError on a broker
    error that does not pass on its own at once; while the consumer reports transient
    conditions (a broker restarting, a leader moving) it keeps trying, and raises a
    transient RangeReadError when nothing arrived for ``stall_timeout_s``.
    """
    if offsets.end <= offsets.start:
        return
    consumer = range_consumer(cluster, role)
    tp = TopicPartition(offsets.topic, offsets.partition, offsets.start)
    consumer.assign([tp])
    try:
        yield from _records(consumer, offsets, stall_timeout_s)
    finally:
        consumer.unassign()


def _records(consumer: Consumer, offsets: OffsetRange, stall_s: float) -> Iterator[list[Any]]:
    watch = _Watch(offsets, stall_s)
    first = True
    while True:
        messages = next_messages(consumer)
        if first and messages:
            # librdkafka drops what was fetched for an earlier assignment of this cached
            # consumer; a record of another partition here would be copied to the wrong
            # one, so the first batch after assign is checked anyway.
            messages = [m for m in messages if m.error() is not None or _of(m, offsets)]
            first = not messages
        if not messages:
            # Retention may have deleted the rest of the range: the consumer was reset
            # to the log start past it and librdkafka reports no EOF there.
            if _position(consumer, offsets) >= offsets.end:
                return
            watch.check()
            continue
        batch, done = _take(consumer, offsets, messages, watch)
        if batch or done:
            watch.progressed()
        else:
            watch.check()
        if batch:
            yield batch
        if done:
            return


def _take(
    consumer: Consumer, offsets: OffsetRange, messages: list[Any], watch: _Watch
) -> tuple[list[Any], bool]:
    """The records of ``messages`` inside the range, and whether the range is done."""
    batch: list[Any] = []
    for message in messages:
        error = message.error()
        if error is None:
            if message.offset() >= offsets.end:
                return batch, True
            batch.append(message)
        elif error.code() == KafkaError._PARTITION_EOF:
            if _position(consumer, offsets) >= offsets.end:
                return batch, True
        elif is_transient(error):
            watch.trouble = error  # librdkafka reconnects and retries by itself
        else:
            raise RangeReadError(
                f"reading {offsets}: {error.str()}",
                transient=False,
                condition=condition_of(error, _where(offsets)),
            )
    return batch, False


class _Watch:
    """How long a range read went without progress, and the last transient condition."""

    def __init__(self, offsets: OffsetRange, stall_s: float) -> None:
        self.offsets = offsets
        self.stall_s = stall_s
        self.last = time.monotonic()
        self.trouble: KafkaError | None = None

    def progressed(self) -> None:
        self.last = time.monotonic()

    def check(self) -> None:
        if time.monotonic() - self.last > self.stall_s:
            raise stalled(self.offsets, self.stall_s, self.trouble)


def stalled(offsets: OffsetRange, stall_s: float, trouble: KafkaError | None) -> RangeReadError:
    """The transient error of a range that got no record for ``stall_s``."""
    where = _where(offsets)
    why = f" ({trouble.str()})" if trouble is not None else ""
    return RangeReadError(
        f"reading {offsets}: no record for {stall_s:g}s{why}",
        transient=True,
        condition=(
            condition_of(trouble, where)
            if trouble is not None
            else f"no record from {where} for {stall_s:g}s"
        ),
    )


def _where(offsets: OffsetRange) -> str:
    return f"{offsets.topic}[{offsets.partition}]"


def next_messages(consumer: Consumer) -> list[Any]:
    """What is fetched already, without waiting; else wait up to 0.5 s for the first
    message (consume(n, timeout) would wait the whole timeout for n messages)."""
    messages: list[Any] = consumer.consume(CONSUME_BATCH, 0)
    if messages:
        return messages
    first = consumer.poll(0.5)
    if first is None:
        return []
    return [first, *consumer.consume(CONSUME_BATCH - 1, 0)]


def _of(message: Any, offsets: OffsetRange) -> bool:
    return bool(message.partition() == offsets.partition and message.topic() == offsets.topic)


def _position(consumer: Consumer, offsets: OffsetRange) -> int:
    found = consumer.position([TopicPartition(offsets.topic, offsets.partition)])[0]
    return int(found.offset)
