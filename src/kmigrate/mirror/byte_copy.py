"""The executor side of the mirror, copying record batches as bytes: inside a Spark task,
each planned range is fetched from its source leader (read_committed: control batches
and aborted transactions' batches dropped, as Kafka's consumer drops them) and every
batch is produced unchanged to the same target partition's leader, as the worker's own
idempotent producer: only the batch's producer id, epoch, base sequence and CRC are
rewritten (kmigrate.codec.batch_copy). Same records, compression, CreateTime
timestamps and headers; nothing is decoded. Consecutive uncompressed batches of a
partition are sent as one merged batch (kmigrate.codec.batch_merge: each record's
offset and timestamp deltas rewritten, nothing else), so small batches cost the target
one append per merged batch, not one per source batch.

The contract is every copier's (kmigrate.mirror.ranges): a ``RangePlan`` in, a
``RangeResult`` out, runs proven by the target's answers. Each answer names the target
offset the batch went to; a batch counts only if it went exactly where the map says the
target ends (anything else is a foreign write), and after a partition's first failure
nothing more of it counts. A range whose target already holds more than the map knows
(an interrupted attempt) is read back and copied by the record copier, which proves
those records equal; so are batches a broker would not store unchanged (a range edge
inside a batch, compaction's holes, LogAppendTime, old message formats), the only
records decoded. A fetch of deleted offsets hands the range to the record copier too,
which reports the loss as it always has.

On any produce failure the worker forgets its producer id (its sequence numbers are
no longer certain); the next task asks the target for a new one. The worker's event loop
and cluster links are byte_cluster.py; the requests, byte_requests.py; the target
brokers' produce pipelines, byte_sink.py.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from kmigrate.codec import batch_copy, batch_merge
from kmigrate.kafka.protocol import wire
from kmigrate.kafka.protocol.link import (
    BackendUnavailable,
)
from kmigrate.mirror.byte_cluster import runtime
from kmigrate.mirror.byte_requests import Partition, fetch_request
from kmigrate.mirror.byte_sink import Sink
from kmigrate.mirror.copy_task import copy_ranges
from kmigrate.mirror.ranges import (
    SOURCE_UNAVAILABLE,
    TARGET_UNAVAILABLE,
    CopySettings,
    RangePlan,
    RangeResult,
)
from kmigrate.mirror.written import partition_name
from kmigrate.model.offsets import coalesce
from kmigrate.spark.kafka_range import forget_client, worker_client

T = TypeVar("T")
# Partitions whose target refused a merged batch as too large (its max.message.bytes is
# below batch_merge.MERGE_BYTES): their batches go one by one in this process from then on.
_UNMERGED: set[tuple[str, int]] = set()

_RETRIABLE_ID = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
    ErrorCode.not_enough_replicas,
    ErrorCode.request_timed_out,
}


def copy_ranges_as_bytes(
    settings: CopySettings, plans: Iterable[RangePlan]
) -> Iterator[RangeResult]:
    """The Spark task function (``mapPartitions``) of a link copying bytes: one result
    per planned range. Ranges whose target holds more than the map knows go to the
    record copier, which reads them back first."""
    plans = list(plans)
    resumed = [p for p in plans if p.actual_end != p.expected_end]
    if resumed:
        yield from copy_ranges(settings, resumed)
    together = [p for p in plans if p.actual_end == p.expected_end]
    if together:
        yield from _finish(settings, runtime().run(_ByteCopy(settings, together).run()))


class _Producer:
    """The worker's idempotent identity on the target, kept across tasks."""

    def __init__(self) -> None:
        self.id: tuple[int, int] | None = None  # (producer id, epoch)
        self.sequences: dict[tuple[str, int], int] = {}


class _ByteCopy:
    def __init__(self, settings: CopySettings, plans: list[RangePlan]) -> None:
        self.settings = settings
        self.parts = {
            (p.topic, p.partition): Partition(p, p.start, p.expected_end, acked_next=p.expected_end)
            for p in plans
        }
        self.source = runtime().cluster(settings.source, "source")
        self.target = runtime().cluster(settings.target, "target")
        self.producer: _Producer = worker_client("byte-producer", settings.target, _Producer)
        self.sinks: dict[tuple[str, int], Sink] = {}  # by target broker address
        self.sink_of: dict[tuple[str, int], Sink] = {}  # by (topic, partition)
        self.total_read = 0
        self.rack = str(settings.source.get("client.rack", ""))  # KIP-392
        self.reading: list[asyncio.Future[None]] = []  # lanes: fetches from one broker
        self.read_from: dict[tuple[str, int], tuple[str, int]] = {}  # who served what

    async def run(self) -> list[Partition]:
        await self._copy()
        if any(p.error is not None for p in self.parts.values()):
            self.source.forget_leaders()  # a leader may have moved
            self.target.forget_leaders()
        return list(self.parts.values())

    async def _copy(self) -> None:
        topics = sorted({p.plan.topic for p in self.parts.values()})
        try:
            source_leaders = await self.source.leaders(topics)
        except (BackendUnavailable, OSError, TimeoutError) as exc:
            return self._all_fail(SOURCE_UNAVAILABLE, f"source: {exc}")
        try:
            target_leaders = await self.target.leaders(topics)
            await self._identity()
        except (BackendUnavailable, OSError, TimeoutError) as exc:
            return self._all_fail(TARGET_UNAVAILABLE, f"target: {exc}")
        lanes: dict[tuple[str, int], list[Partition]] = {}
        for key, part in self.parts.items():
            source, target = source_leaders.get(key), target_leaders.get(key)
            if source is None or target is None:
                code = SOURCE_UNAVAILABLE if source is None else TARGET_UNAVAILABLE
                part.fail(
                    code, f"{partition_name(part.plan)} has no leader on the {code.split('-')[0]}"
                )
                continue
            lanes.setdefault(self.source.preferred.get(key, source), []).append(part)
            if target not in self.sinks:
                self.sinks[target] = Sink(
                    self.target.link(target), self.forget_producer, _UNMERGED.add
                )
            self.sink_of[key] = self.sinks[target]
        self.reading = [asyncio.ensure_future(self._read(a, ps)) for a, ps in lanes.items()]
        while self.reading:  # a lane may hand a partition to a replica's lane of its own
            reading, self.reading = self.reading, []
            await asyncio.gather(*reading)
        await self._drain()

    def _all_fail(self, code: str, message: str) -> None:
        for part in self.parts.values():
            part.fail(code, message)

    async def _identity(self) -> None:
        if self.producer.id is not None:
            return
        deadline = time.monotonic() + self.settings.outage_s
        request = wire.request_type(22, 4)(
            transactional_id=None,
            transaction_timeout=dt.timedelta(minutes=1),
            producer_id=-1,
            producer_epoch=-1,
        )
        while True:
            answer = await self.target.call_any(request)
            if answer.error_code == ErrorCode.none:
                self.producer.id = (int(answer.producer_id), int(answer.producer_epoch))
                self.producer.sequences = {}
                return
            if answer.error_code not in _RETRIABLE_ID or time.monotonic() > deadline:
                raise BackendUnavailable(
                    f"the target gives no producer id ({answer.error_code.name})"
                )
            await asyncio.sleep(0.2)

    async def _read(self, address: tuple[str, int], parts: list[Partition]) -> None:
        """Fetch ``parts`` from the source broker at ``address`` (their leader, or the
        replica their leader said to read from) until each is done."""
        link = self.source.link(address)
        stall = time.monotonic()
        alone: list[Partition] = []
        while pending := [p for p in parts if not p.done]:
            # A batch larger than a partition's fetch size comes whole only when its
            # partition is the first of the fetch: such a partition is fetched alone.
            asked = alone[:1] or pending
            try:
                answer = await link.call(fetch_request(asked, self.rack))
            except (BackendUnavailable, OSError, TimeoutError) as exc:
                for part in asked:
                    part.fail(SOURCE_UNAVAILABLE, f"source: {exc}")
                return
            alone = [a for a in alone if not a.done and a not in asked]
            if self._answered(answer, address, parts, alone):
                stall = time.monotonic()
            elif time.monotonic() - stall > self.settings.outage_s:
                for part in (p for p in parts if not p.done):
                    part.fail(
                        SOURCE_UNAVAILABLE,
                        f"no records from the source for {partition_name(part.plan)}",
                    )
                return
            if self.total_read >= self.settings.max_bytes:
                for part in (p for p in parts if not p.done):
                    part.done = True  # the rest is the next batch's
                return

    def _answered(
        self, answer: Any, address: tuple[str, int], parts: list[Partition], alone: list[Partition]
    ) -> bool:
        """Take one Fetch answer from ``address``: whether any partition progressed (or
        moved to the replica its leader named). A partition whose answer held records
        but no whole batch goes into ``alone``."""
        progressed = False
        for topic in answer.responses:
            for data in topic.partitions:
                part = self.parts[(topic.topic, int(data.partition_index))]
                if self._elsewhere(part, data, address):
                    parts.remove(part)
                    progressed = True
                    continue
                before = part.position
                self._take(part, data)
                if data.records:
                    self.read_from[part.key] = address
                if part.position != before or part.done:
                    progressed = True
                elif data.records:
                    alone.append(part)
        return progressed

    def _elsewhere(self, part: Partition, data: Any, address: tuple[str, int]) -> bool:
        """Whether the leader named another replica to read ``part`` from (KIP-392: one
        in the client's rack); then it is read there, in a lane of its own."""
        replica = int(getattr(data, "preferred_read_replica", -1))
        there = self.source.addresses.get(replica) if replica >= 0 else None
        if there is None or there == address:
            return False
        self.source.preferred[part.key] = there
        self.reading.append(asyncio.ensure_future(self._read(there, [part])))
        return True

    def _take(self, part: Partition, data: Any) -> None:
        plan = part.plan
        if data.error_code == ErrorCode.offset_out_of_range:
            # Deleted before it was copied: the record copier reads on from the log's
            # start, and the driver names the loss (or records the gap).
            part.by_records = (part.position, plan.end, "source offsets deleted")
            part.done = True
            return
        if data.error_code != ErrorCode.none:
            part.fail(SOURCE_UNAVAILABLE, f"source {partition_name(plan)}: {data.error_code.name}")
            return
        records = data.records or b""
        aborted = [
            (int(a.producer_id), int(a.first_offset)) for a in data.aborted_transactions or ()
        ]
        found = list(batch_copy.steps(records, aborted, part.position, plan.end))
        small = batch_copy.small_batches(found)
        if small is not None:
            part.first_seen = part.position if part.first_seen is None else part.first_seen
            part.by_records = (part.position, plan.end, small)
            part.done = True
            return
        merging = part.key not in _UNMERGED
        group = batch_merge.Group()
        for step in found:
            if part.first_seen is None:
                part.first_seen = step.start
            if step.kind == batch_copy.COPY and merging and group.takes(step.head):
                group.add(step.head)  # sent with the batches after it that merge with it
                part.position = step.stop
                continue
            self._send(part, records, group)
            group = batch_merge.Group()
            if step.kind == batch_copy.RECORDS:
                stop = step.stop if step.reason == batch_copy.STRADDLES else plan.end
                part.by_records = (step.start, stop, step.reason)
                part.done = True
                return
            if part.error is not None:
                return  # a produce failed meanwhile
            if step.kind == batch_copy.COPY:
                group.add(step.head)
            part.position = step.stop
        self._send(part, records, group)
        if part.position >= plan.end:
            part.done = True

    def _send(self, part: Partition, records: Any, group: batch_merge.Group) -> None:
        """``group``'s batches as one batch of the worker's idempotent producer: the one
        batch as it was (header aside), or several merged (codec.batch_merge)."""
        if not group.heads or part.error is not None:
            return
        assert self.producer.id is not None
        pid, epoch = self.producer.id
        sequence = self.producer.sequences.get(part.key, 0)
        if len(group.heads) == 1:
            (head,) = group.heads
            header, body = batch_copy.as_producer(records, head, pid, epoch, sequence)
        else:
            head = batch_merge.merged_head(group.heads)
            header, merged = batch_merge.merge(records, group.heads, pid, epoch, sequence)
            body = memoryview(merged)
        self.producer.sequences[part.key] = batch_copy.next_sequence(sequence, head)
        self.sink_of[part.key].send(part, header, body, head)
        part.target_next += head.offsets
        part.seen += head.count
        self.total_read += sum(h.end - h.start for h in group.heads)  # see settings.max_bytes
        part.last_timestamp = head.max_timestamp
        part.merged += len(group.heads) - 1

    def forget_producer(self) -> None:
        """Sequence numbers are no longer certain: the next task gets a new id."""
        forget_client("byte-producer", self.settings.target)

    async def _drain(self) -> None:
        deadline = time.monotonic() + self.settings.flush_timeout_s
        for sink in self.sinks.values():
            left = max(deadline - time.monotonic(), 0.1)
            try:
                await asyncio.wait_for(sink.drain(), left)
            except TimeoutError:
                sink.abandon(f"no answer from the target within {self.settings.flush_timeout_s:g}s")


def _finish(settings: CopySettings, parts: list[Partition]) -> Iterator[RangeResult]:
    """Each partition's result. What the byte copy handed on goes to the record copier
    (after every batch before it was acknowledged), all those ranges together."""
    results, handed = {}, []
    for part in parts:
        plan = part.plan
        result = RangeResult(plan.topic, plan.partition, runs=coalesce(part.runs))
        result.first_seen, result.seen = part.first_seen, part.seen
        result.last_timestamp = part.last_timestamp
        result.next_offset = part.position
        if part.error is not None:
            result.error = part.error
            result.next_offset = result.runs[-1].source_end if result.runs else None
        elif part.by_records is not None:
            start, stop, _why = part.by_records
            at = part.acked_next
            handed.append(RangePlan(plan.topic, plan.partition, start, stop, at, at))
        results[part.key] = result
    for rest in copy_ranges(settings, handed) if handed else ():
        key = (rest.topic, rest.partition)
        results[key] = _joined(results[key], rest)
    yield from results.values()


def _joined(first: RangeResult, then: RangeResult) -> RangeResult:
    """The byte copy's result for a range, then the record copier's for the part handed
    to it (which its byte limit may have left unread: then reading goes on where the
    byte copy stopped)."""
    first.runs = coalesce([*first.runs, *then.runs])
    if first.first_seen is None:
        first.first_seen = then.first_seen
    first.seen += then.seen
    first.last_timestamp = then.last_timestamp or first.last_timestamp
    first.error = then.error
    if then.error is not None:
        first.next_offset = first.runs[-1].source_end if first.runs else None
    elif then.next_offset is not None:
        first.next_offset = then.next_offset
    return first
