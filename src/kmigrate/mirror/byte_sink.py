"""The byte copy's writing side: one pipeline of produce requests per target broker.

A sink sends the next batch of every partition queued on it in one request (brokers
take one batch per partition per request), ``IN_FLIGHT`` requests at most on one
connection, so a partition's batches and their sequence numbers go in order. Each
answer is checked against the offset its batch had to land at: only a batch that went
exactly there counts, and after a partition's first failure nothing more of it does.
On any produce failure the copy's producer id is forgotten (``forget_producer``): its
sequence numbers are no longer certain.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.codec import batch_copy
from kmigrate.kafka.protocol.link import BackendUnavailable, BrokerLink
from kmigrate.mirror.byte_requests import Item, Partition, produce_request
from kmigrate.mirror.ranges import TARGET_UNAVAILABLE
from kmigrate.mirror.written import FOREIGN, partition_name
from kmigrate.model.offsets import OffsetRun

IN_FLIGHT = 5  # produce requests per target connection (an idempotent producer's limit)
# What a target says of a batch above its max.message.bytes (a merged one may be)
TOO_LARGE = {ErrorCode.message_too_large, ErrorCode.record_list_too_large}
TARGET_TRANSIENT = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.leader_not_available,
    ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append,
    ErrorCode.request_timed_out,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.kafka_storage_error,
    ErrorCode.network_exception,
}


class Sink:
    """Produce requests to one target broker, ``IN_FLIGHT`` at most at once on one
    connection. A request carries the next batch of every partition that has one
    queued (brokers take one batch per partition per request), so a partition's batches
    go in order, and its sequences with them; each answer is checked against the offset
    each batch must land at."""

    def __init__(
        self,
        link: BrokerLink,
        forget_producer: Callable[[], None],
        unmerge: Callable[[tuple[str, int]], None] = lambda _key: None,
    ) -> None:
        self.link, self.forget_producer, self.unmerge = link, forget_producer, unmerge
        self.slots = asyncio.Semaphore(IN_FLIGHT)
        self.queues: dict[tuple[str, int], deque[Item]] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.writer: asyncio.Task[None] | None = None

    def send(self, part: Partition, header: bytes, body: memoryview, head: batch_copy.Head) -> None:
        self.queues.setdefault(part.key, deque()).append(
            (part, header, body, head, part.target_next)
        )
        if self.writer is None or self.writer.done():
            self.writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while any(self.queues.values()):
            await self.slots.acquire()
            items = []
            for queue in self.queues.values():
                while queue and queue[0][0].error is not None:
                    queue.popleft()  # after a partition's first failure nothing more counts
                if queue:
                    items.append(queue.popleft())
            if not items:
                self.slots.release()
                continue
            self.tasks.append(asyncio.ensure_future(self._call(produce_request(items), items)))

    async def _call(self, request: Any, items: list[Item]) -> None:
        try:
            answer = await self.link.call(request)
        except (BackendUnavailable, OSError, TimeoutError) as exc:
            self.forget_producer()
            for part, *_ in items:
                part.fail(TARGET_UNAVAILABLE, f"target {partition_name(part.plan)}: {exc}")
            return
        finally:
            self.slots.release()
        replies = {
            (topic.name, int(reply.index)): reply
            for topic in answer.responses
            for reply in topic.partition_responses
        }
        for part, _, _, head, at in items:
            self._check(part, head, at, replies.get(part.key))

    def _check(self, part: Partition, head: batch_copy.Head, at: int, reply: Any) -> None:
        """Count the batch sent for ``part`` to land at ``at``, or fail the partition."""
        plan = part.plan
        if part.error is not None:
            return
        if reply is None:
            self.forget_producer()
            part.fail(
                "kafka", f"producing to {partition_name(plan)}: the broker did not answer for it"
            )
            return
        if reply.error_code != ErrorCode.none:
            self.forget_producer()
            code = TARGET_UNAVAILABLE if reply.error_code in TARGET_TRANSIENT else "kafka"
            if reply.error_code in TOO_LARGE and part.merged:
                self.unmerge(part.key)  # the next attempt sends its batches one by one
                code = TARGET_UNAVAILABLE
            detail = f": {reply.error_message}" if reply.error_message else ""
            part.fail(
                code, f"producing to {partition_name(plan)} failed: {reply.error_code.name}{detail}"
            )
            return
        if int(reply.base_offset) != at or at != part.acked_next:
            self.forget_producer()
            part.fail(
                "foreign-write",
                FOREIGN.format(where=partition_name(plan), target=min(at, int(reply.base_offset))),
            )
            return
        part.runs.append(OffsetRun(head.base, at, head.offsets))
        part.acked_next = at + head.offsets

    async def drain(self) -> None:
        while self.writer is not None and not self.writer.done():
            await self.writer
        while self.tasks:
            tasks, self.tasks = self.tasks, []
            await asyncio.gather(*tasks)

    def abandon(self, why: str) -> None:
        self.forget_producer()
        if self.writer is not None:
            self.writer.cancel()
        for task in self.tasks:
            task.cancel()
        for queue in self.queues.values():
            for part, *_ in queue:
                part.fail(TARGET_UNAVAILABLE, why)
            queue.clear()
        self.link.close()
