"""Many offset ranges read at once: one consumer assigned to every range's partition.

A task with a thousand small ranges would otherwise pay a fetch round trip (and the
wait at each partition's end) a thousand times, one after the other. Here the worker's
consumer is assigned to all of them at their start offsets, librdkafka fetches them
together (one fetch per broker covers many partitions), and the caller gets each
range's records as they come: in offset order within a range, ranges interleaved.

A range ends exactly as in ``read_range``: at its first record at or past ``end``, or
at partition EOF once the consumer's position reached ``end`` (under read_committed the
last offsets may be markers or aborted records, never delivered). A finished range is
paused, so its partition stops being fetched while the others go on. A range that
fails with a broker error is reported for itself and dropped; the others carry on.
When no range at all progressed for ``stall_timeout_s`` (a cluster restarting), every
open range is reported as transiently unavailable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kmigrate.kafka.retry import condition_of, is_transient
from kmigrate.spark.kafka_range import (
    OffsetRange,
    RangeReadError,
    next_messages,
    range_consumer,
    stalled,
)

Key = tuple[str, int]


@dataclass
class _Open:
    """A range still being read, and the last transient condition its partition met."""

    offsets: OffsetRange
    trouble: KafkaError | None = None


class RangesReader:
    """Iterate for ``(range, records)`` pairs, or ``(range, RangeReadError)`` once for a
    range that failed. ``stop(range)`` ends a range early (the caller has enough).
    ``ended`` holds the ranges read to their end, and only those: a range stopped,
    failed, or left when the caller stopped iterating is not in it, whatever ``open``
    says after the iterator closed."""

    def __init__(
        self,
        cluster: dict[str, Any],
        ranges: Sequence[OffsetRange],
        *,
        stall_timeout_s: float = 120.0,
        role: str = "read",
    ) -> None:
        self.stall_s = stall_timeout_s
        self.progressed = time.monotonic()
        self.open = {(r.topic, r.partition): _Open(r) for r in ranges if r.end > r.start}
        if len(self.open) != len([r for r in ranges if r.end > r.start]):
            raise ValueError("two ranges of one partition cannot be read at once")
        self.ended: set[Key] = {(r.topic, r.partition) for r in ranges if r.end <= r.start}
        self.consumer: Consumer | None = None
        self.paused: list[TopicPartition] = []
        if self.open:
            self.consumer = range_consumer(cluster, role)
            assigned = [TopicPartition(t, p, o.offsets.start) for (t, p), o in self.open.items()]
            self.consumer.assign(assigned)
            # A partition paused by an earlier reader of this cached consumer would stay
            # paused: librdkafka keeps an application's pause across assignments.
            self.consumer.resume(assigned)

    def __iter__(self) -> Iterator[tuple[OffsetRange, list[Any] | RangeReadError]]:
        try:
            while self.open:
                assert self.consumer is not None
                messages = next_messages(self.consumer)
                if messages:
                    yield from self._sort(messages)
                else:
                    self._ended_without_eof()
                yield from self._stalled()
        finally:
            self.close()

    def stop(self, offsets: OffsetRange) -> None:
        """Read no more of ``offsets`` (its partition is paused)."""
        self._finish((offsets.topic, offsets.partition))

    def close(self) -> None:
        if self.consumer is not None:
            if self.paused:
                self.consumer.resume(self.paused)  # see __init__
            self.consumer.unassign()
            self.consumer = None
        self.open.clear()

    # ------------------------------------------------------------ internals

    def _sort(
        self, messages: list[Any]
    ) -> Iterator[tuple[OffsetRange, list[Any] | RangeReadError]]:
        """The messages of one consume call, per open range, in order."""
        batches: dict[Key, list[Any]] = {}
        ended: list[Key] = []
        for message in messages:
            key = (message.topic(), message.partition())
            state = self.open.get(key)
            if state is None or key in ended:
                continue  # a range already finished (or fetched for an earlier assignment)
            error = message.error()
            if error is None:
                if message.offset() >= state.offsets.end:
                    ended.append(key)
                elif message.offset() >= state.offsets.start:
                    batches.setdefault(key, []).append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                if self._position(key) >= state.offsets.end:
                    ended.append(key)
            elif is_transient(error):
                state.trouble = error  # librdkafka reconnects and retries by itself
            else:
                failure = RangeReadError(
                    f"reading {state.offsets}: {error.str()}",
                    transient=False,
                    condition=condition_of(error, _where(state.offsets)),
                )
                yield state.offsets, failure
                self._finish(key)
        if batches or ended:
            self.progressed = time.monotonic()
        for key, batch in batches.items():
            yield self.open[key].offsets, batch
        for key in ended:
            self._finish(key, reached_end=True)

    def _ended_without_eof(self) -> None:
        """Retention may have deleted the rest of a range: the consumer was reset to the
        log start past it and librdkafka reports no EOF there."""
        assert self.consumer is not None
        keys = list(self.open)
        found = self.consumer.position([TopicPartition(t, p) for t, p in keys])
        for key, tp in zip(keys, found, strict=True):
            if tp.offset >= self.open[key].offsets.end:
                self._finish(key, reached_end=True)

    def _stalled(self) -> Iterator[tuple[OffsetRange, RangeReadError]]:
        """Every open range, once no range made progress for ``stall_s``: one partition
        waiting while others flow is waiting its turn, not stalled."""
        if time.monotonic() - self.progressed <= self.stall_s:
            return
        for key, state in list(self.open.items()):
            yield state.offsets, stalled(state.offsets, self.stall_s, state.trouble)
            self._finish(key)

    def _finish(self, key: Key, *, reached_end: bool = False) -> None:
        if reached_end and key in self.open:
            self.ended.add(key)
        if self.open.pop(key, None) is not None and self.consumer is not None:
            self.paused.append(TopicPartition(*key))
            self.consumer.pause(self.paused[-1:])

    def _position(self, key: Key) -> int:
        assert self.consumer is not None
        return int(self.consumer.position([TopicPartition(*key)])[0].offset)


def _where(offsets: OffsetRange) -> str:
    return f"{offsets.topic}[{offsets.partition}]"
