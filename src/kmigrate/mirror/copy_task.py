"""The executor side of the mirror: copy one source offset range to the same target
partition, inside a Spark task, with confluent-kafka on both ends.

A task gets a ``RangePlan`` (from the driver, which alone talks to the store) and
returns a ``RangeResult``: offset runs, the first offset seen, where reading stopped,
and at most one error. For its partition it

1. reads the range with the worker's cached read_committed consumer;
2. if the target partition is ahead of where the map says it should end, reads those
   target records back and accepts them only if they equal, in order, the next records
   of the range (an earlier attempt wrote them and died before recording);
3. produces the rest to the same partition number with key, value, headers and
   timestamp through the worker's cached producer (idempotent, acks=all, gapless).

Delivery reports are requested only for the first and last record of each chunk (the
records of one consume call): a Python callback per record costs a third of the
throughput on small records. With one writer per mirror topic and a gapless idempotent
producer, a chunk whose last - first + 1 equals its length, adjacent to the chunk
before, was written contiguously in order; anything else fails the partition
(``foreign-write`` for a longer span or a misplaced chunk, ``kafka`` for a shorter
one), and only the chunks proven before it count.

When a cluster stops answering (a broker restarting, a leader moving), librdkafka
retries by itself; a task that makes no progress for ``outage_s`` while that lasts
gives up with a ``source-unavailable`` or ``target-unavailable`` result: it purges what
its producer still holds, drops that producer, and reports the chunks proven so far.
The driver waits the outage out and plans again from the offset map; records the
purged attempt still got onto the target are found there and kept (step 2).

It never raises for a data problem; the driver decides. Anything else that stops a
task fails the batch, and the next attempt starts again from the offset map.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Iterator
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    KafkaError,
    KafkaException,
    Producer,
)

from kmigrate.kafka.retry import condition_of, is_transient
from kmigrate.mirror.ranges import (
    SOURCE_UNAVAILABLE,
    TARGET_UNAVAILABLE,
    CopySettings,
    RangePlan,
    RangeResult,
)
from kmigrate.mirror.written import (
    Chunk,
    behind,
    chunk_problem,
    foreign,
    partition_name,
    partitions_named,
    same,
)
from kmigrate.model.offsets import coalesce, runs_from_deliveries, runs_of_chunk
from kmigrate.spark.kafka_range import (
    OffsetRange,
    RangeReadError,
    forget_client,
    read_range,
    worker_client,
)
from kmigrate.spark.kafka_ranges import RangesReader

_METADATA_LAGS = {KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


def copy_ranges(settings: CopySettings, plans: Iterable[RangePlan]) -> Iterator[RangeResult]:
    """The Spark task function (``mapPartitions``): one result per planned range.

    Ranges whose target ends where the map says are read together (one consumer
    assigned to all their partitions) and written through the one producer, drained
    once: a task's cost follows its bytes, not its partition count. A range whose
    target holds more than the map knows (an interrupted attempt) is read back and
    copied on its own first.
    """
    plans = list(plans)
    for plan in plans:
        if plan.actual_end != plan.expected_end:
            yield _RangeCopy(settings, plan, _Output(settings)).run()
    together = [p for p in plans if p.actual_end == p.expected_end]
    if together:
        yield from _copy_together(settings, together)


def _copy_together(settings: CopySettings, plans: list[RangePlan]) -> Iterator[RangeResult]:
    output = _Output(settings)
    copies = {(p.topic, p.partition): _RangeCopy(settings, p, output) for p in plans}
    reader = RangesReader(
        settings.source,
        [OffsetRange(p.topic, p.partition, p.start, p.end) for p in plans],
        stall_timeout_s=settings.outage_s,
    )
    size = 0
    for offsets, read in reader:
        copy = copies[(offsets.topic, offsets.partition)]
        if isinstance(read, RangeReadError):
            copy.result.fail(SOURCE_UNAVAILABLE if read.transient else "kafka", _read_failure(read))
            continue
        size += copy.take(read)
        if copy.result.error is not None:
            reader.stop(offsets)
        if output.abandoned or size >= settings.max_bytes:
            break
    reader.close()
    remaining = output.drain(partitions_named(plans))
    for key, copy in copies.items():
        # Only a range read to its end is done; one the byte limit cut goes on from where
        # reading stopped (its iterator closed on the break: ``reader.open`` is empty).
        if key in reader.ended:
            copy.result.next_offset = copy.plan.end
        elif copy.read_to is not None:
            copy.result.next_offset = copy.read_to  # the rest is the next batch's
        copy.finish(remaining)
        yield copy.result


class _TargetReadError(Exception):
    """Reading the target back failed (kept apart from source read failures)."""

    def __init__(self, cause: RangeReadError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Writer:
    """The worker's target producer and the last transient condition it reported."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.trouble: KafkaError | None = None
        self.producer = Producer({**config, "error_cb": self._on_error})

    def _on_error(self, error: KafkaError) -> None:
        if is_transient(error):
            self.trouble = error


class _Output:
    """The worker's target producer as the ranges of one task share it: drained once
    for all of them, and given up on for all of them when the target stops answering."""

    def __init__(self, settings: CopySettings) -> None:
        self.settings = settings
        self.config = settings.producer_config()
        self.writer: _Writer = worker_client("producer", self.config, self._new_writer)
        self.writer.trouble = None
        self.producer: Producer = self.writer.producer
        self.results: list[RangeResult] = []
        self.abandoned = False  # the target stopped acknowledging; the producer was purged

    def _new_writer(self) -> _Writer:
        return _Writer(self.config)

    def drain(self, where: str) -> int:
        """Wait for the delivery reports of everything produced to ``where``; returns how
        many are still missing (the flush timeout passed, or the target stopped
        acknowledging)."""
        deadline = time.monotonic() + self.settings.flush_timeout_s
        remaining = len(self.producer)
        stall = _Stall(remaining, self.settings.outage_s)
        while remaining and not self.abandoned:
            remaining = self.producer.flush(min(1.0, max(deadline - time.monotonic(), 0)))
            if remaining and stall.stuck(remaining):
                self.abandon(where)
            elif time.monotonic() >= deadline:
                break
        return remaining

    def abandon(self, where: str) -> None:
        """The target acknowledged nothing for ``outage_s``: stop waiting. What the
        producer still holds is purged (delivery reports fail those chunks) and the
        producer dropped, so nothing of this attempt is sent later; records already
        sent may still land, and the next attempt reads them back. Every range of the
        task reports the target unavailable (its proven chunks still count)."""
        if self.abandoned:
            return
        self.abandoned = True
        trouble = self.writer.trouble
        condition = (
            condition_of(trouble, where)
            if trouble is not None
            else f"no acknowledgement from {where} for {self.settings.outage_s:g}s"
        )
        for result in self.results:
            result.fail(TARGET_UNAVAILABLE, condition)
        self.producer.purge(in_queue=True, in_flight=True, blocking=True)
        self.producer.flush(0)
        forget_client("producer", self.config)


class _RangeCopy:
    def __init__(self, settings: CopySettings, plan: RangePlan, output: _Output) -> None:
        self.settings = settings
        self.plan = plan
        self.output = output
        self.result = RangeResult(plan.topic, plan.partition)
        output.results.append(self.result)
        self.verified: list[tuple[int, int]] = []  # (source, target) found on the target
        self.chunks: list[Chunk] = []
        self.on_target: Generator[Any, None, None] | None = None  # records to read back
        self.producer: Producer = output.producer
        self.read_to: int | None = None  # the source offset after the last record read

    @property
    def to_verify(self) -> int:
        return self.plan.actual_end - self.plan.expected_end - len(self.verified)

    def run(self) -> RangeResult:
        plan, result = self.plan, self.result
        if plan.actual_end < plan.expected_end:
            result.fail("foreign-write", behind(plan))
            return result
        try:
            self._copy()
        except RangeReadError as exc:
            result.fail(SOURCE_UNAVAILABLE if exc.transient else "kafka", _read_failure(exc))
        except _TargetReadError as exc:
            transient = exc.cause.transient
            result.fail(TARGET_UNAVAILABLE if transient else "kafka", _read_failure(exc.cause))
        finally:
            self._close_reader()
        self.finish(self.output.drain(partition_name(self.plan)) if self.chunks else 0)
        return result

    def _copy(self) -> None:
        plan, result = self.plan, self.result
        source = OffsetRange(plan.topic, plan.partition, plan.start, plan.end)
        size = 0
        for read in read_range(
            self.settings.source, source, stall_timeout_s=self.settings.outage_s
        ):
            size += self.take(read)
            if result.error is not None:
                return
            if size >= self.settings.max_bytes:
                result.next_offset = self.read_to
                return
        result.next_offset = plan.end

    def take(self, read: list[Any]) -> int:
        """Copy the next records read from the range (after reading back what the target
        holds beyond the map); returns their key and value bytes."""
        result = self.result
        if result.first_seen is None:
            result.first_seen = read[0].offset()
        result.seen += len(read)
        self.read_to = read[-1].offset() + 1
        messages = self._verify(read) if self.to_verify > 0 else read
        if messages and result.error is None:
            return self._send(messages)
        return 0

    def _verify(self, messages: list[Any]) -> list[Any]:
        """The target holds records the map does not know: they must be the range's next.
        Returns the messages left to produce."""
        for index, message in enumerate(messages):
            if self.to_verify == 0:
                self._close_reader()
                return messages[index:]
            target_offset = self.plan.expected_end + len(self.verified)
            if self.on_target is None:
                self.on_target = self._target_records()
            found = next(self.on_target, None)
            if found is None or found.offset() != target_offset or not same(found, message):
                self.result.fail(
                    "foreign-write", foreign(self.plan, target_offset, message.offset())
                )
                return []
            self.verified.append((message.offset(), target_offset))
            self.result.last_timestamp = message.timestamp()[1]
        if self.to_verify == 0:
            self._close_reader()
        return []

    def _target_records(self) -> Generator[Any, None, None]:
        """The target records past where the map says the target ends, one by one."""
        plan = self.plan
        extra = OffsetRange(plan.topic, plan.partition, plan.expected_end, plan.actual_end)
        reader = read_range(
            self.settings.target, extra, role="read-back", stall_timeout_s=self.settings.outage_s
        )
        try:
            for batch in reader:
                yield from batch
        except RangeReadError as exc:
            raise _TargetReadError(exc) from None

    def _close_reader(self) -> None:
        if self.on_target is not None:
            self.on_target.close()
            self.on_target = None

    def _send(self, messages: list[Any]) -> int:
        """Produce ``messages`` as one chunk; returns their key and value bytes."""
        chunk = Chunk([m.offset() for m in messages])
        self.chunks.append(chunk)
        last = len(messages) - 1
        size = 0
        for index, message in enumerate(messages):
            callback: Any = None
            if index == 0:
                callback = chunk.on_both if last == 0 else chunk.on_first
            elif index == last:
                callback = chunk.on_last
            value, key = message.value(), message.key()
            size += (len(value) if value else 0) + (len(key) if key else 0)
            if not self._produce(message, value, key, callback):
                return size
        self.result.last_timestamp = messages[-1].timestamp()[1]
        self.producer.poll(0)
        return size

    def _produce(self, message: Any, value: Any, key: Any, callback: Any) -> bool:
        kind, ts = message.timestamp()
        kwargs: dict[str, Any] = {
            "partition": self.plan.partition,
            "timestamp": 0 if kind == TIMESTAMP_NOT_AVAILABLE else ts,
        }
        headers = message.headers()
        if headers:
            kwargs["headers"] = headers
        if callback is not None:
            kwargs["on_delivery"] = callback
        deadline = time.monotonic() + self.settings.flush_timeout_s
        stall = _Stall(len(self.producer), self.settings.outage_s)
        while True:
            try:
                self.producer.produce(self.plan.topic, value, key, **kwargs)
                return True
            except BufferError:
                # The queue is full: wait for acknowledgements, unless they stopped coming.
                self.producer.poll(0.05)
                if stall.stuck(len(self.producer)):
                    self.output.abandon(partition_name(self.plan))
                    return False
            except KafkaException as exc:
                code = exc.args[0].code() if exc.args else None
                if code in _METADATA_LAGS and time.monotonic() < deadline:
                    # A partition just added: this cached producer has not seen it yet.
                    self.producer.list_topics(self.plan.topic, timeout=5)
                    continue
                if exc.args:
                    self.chunks[-1].failed(exc.args[0])
                else:
                    self.chunks[-1].error = f"{exc}"
                self.result.fail("kafka", f"producing to {partition_name(self.plan)} failed: {exc}")
                return False

    def finish(self, remaining: int) -> None:
        """Turn the chunks whose delivery reports came (the producer was drained; the
        reports of ``remaining`` records are missing) into runs."""
        result, plan = self.result, self.plan
        runs = runs_from_deliveries(self.verified)
        expected = plan.expected_end + len(self.verified)
        for chunk in self.chunks:
            problem = chunk_problem(
                chunk, expected, remaining, self.settings.flush_timeout_s, partition_name(plan)
            )
            if problem is not None:
                result.fail(*problem)
                if chunk.fatal:
                    forget_client("producer", self.output.config)
                break
            assert chunk.first is not None
            runs.extend(runs_of_chunk(chunk.sources, chunk.first))
            expected = chunk.first + len(chunk.sources)
        result.runs = coalesce(runs)
        result.resumed = len(self.verified)
        if result.error is not None:
            # Only what was verifiably written counts; the rest is read again next time.
            result.next_offset = result.runs[-1].source_end if result.runs else None


def _read_failure(exc: RangeReadError) -> str:
    """The condition of a transient failure (for a status line), else the message."""
    return exc.condition if exc.transient else str(exc)


class _Stall:
    """Notices when a count of outstanding messages stopped going down for too long."""

    def __init__(self, outstanding: int, limit_s: float) -> None:
        self.best = outstanding
        self.since = time.monotonic()
        self.limit_s = limit_s

    def stuck(self, outstanding: int) -> bool:
        if outstanding < self.best:
            self.best, self.since = outstanding, time.monotonic()
        return time.monotonic() - self.since > self.limit_s
