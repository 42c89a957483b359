"""Produce, as the gateway answers it: split by partition to the backend broker leading
each (kmigrate.gateway.serving.split), always with acks=all, an idempotent producer's
batches carrying the producer id the backend knows. A partition that moved answers in
virtual offsets; its writes wait while a move fences them
(kmigrate.gateway.control.fences); a retried write its origin already holds is
answered as written, not written twice. A transactional producer's batches go to the
group home unchanged; one that would write elsewhere is refused
(kmigrate.gateway.serving.transactions).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records

from kmigrate.codec import batches
from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.serving import split, starts, transactions, virtual
from kmigrate.gateway.serving.first_writes import Key
from kmigrate.gateway.serving.messages import (
    ProducePartition,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
)
from kmigrate.gateway.serving.sequences import SequenceGuard, Write
from kmigrate.gateway.serving.state import State, quiet

log = logging.getLogger("kmigrate.gateway.handlers")  # as before the move (logs)


async def produce(
    state: State, body: ProduceRequest, guard: SequenceGuard
) -> ProduceResponse | None:
    """The answer to a Produce request (None for acks=0: the client expects none)."""
    if body.transactional_id and (spanning := await transactions.refused_produce(state, body)):
        return spanning  # a transaction would span backends

    async def send(target: split.Target, part: ProduceRequest) -> ProduceResponse:
        part = await _for_cluster(state, target[0], with_acks_all(part))
        answer: ProduceResponse = await state.send(target, part)
        _saw_written(state, target[0], part, answer)
        return answer

    keys = [(t.name, int(p.index)) for t in body.topic_data for p in t.partition_data]
    if int(body.acks) == 0:
        _fire_and_forget(state, body, keys, send)
        return None
    # Known to the connection's guard from arrival on: while this request is parked
    # behind a fence, a later request's batch of the same partition that overtakes it
    # and is refused as out of order is not the client's gap (kmigrate.gateway.serving.
    # sequences).
    writes = _writes(body)
    for write in writes:
        guard.sent(write)
    opened: dict[starts.Partition, Key] = {}
    # A transaction's writes are neither parked nor waited for by a fence: it added its
    # partitions before the fence (AddPartitionsToTxn waits behind one), and the move
    # waits for it to end before it reads the origin's end offset
    # (kmigrate.gateway.control.transactions). Counted, a producer writing all the time
    # could keep the fence from ever being acknowledged.
    transactional = bool(body.transactional_id)
    try:
        if not transactional:
            await state.fences.admit(keys)
        with contextlib.nullcontext() if transactional else state.fences.writing(keys):
            opened, refused = await starts.check(state, body)
            answer = await split.produce(
                body,
                _place_write(state, body, refused, parked=not transactional),
                send,
                on_failure=lambda target, exc: _produce_failed(state, target, exc),
                on_errors=state.answered,
            )
    except BaseException:
        starts.settle(state, opened, None)
        for write in writes:
            guard.answered(write, ErrorCode.unknown_server_error)
        raise
    starts.settle(state, opened, answer)
    return _guarded(answer, writes, guard)


def _saw_written(state: State, cluster: str, part: ProduceRequest, answer: ProduceResponse) -> None:
    """The marks written batches prove: their end, a batch boundary (a failover's start
    offset inside a batch would leave the batch's first records unreadable: a batch is
    served whole or not at all)."""
    taken = {
        (t.name, int(p.index)): batches.offsets_taken(bytes(p.records or b""))
        for t in part.topic_data
        for p in t.partition_data
    }
    for topic in answer.responses:
        for reply in topic.partition_responses:
            if reply.error_code == ErrorCode.none and reply.base_offset >= 0:
                span = taken.get((topic.name, int(reply.index)), 0)
                state.marks.saw(cluster, topic.name, reply.index, reply.base_offset + max(span, 1))
    state.mark_store.soon()


def _place_write(
    state: State, body: ProduceRequest, refused: set[tuple[str, int]], parked: bool = True
) -> split.Place:
    reply_type = split.reply_partition_type(split.PRODUCE, body)

    def place(
        topic: str, item: ProducePartition
    ) -> split.Target | split.Routed | split.Local | ErrorCode:
        found = state.route(topic, item, "index")
        if isinstance(found, ErrorCode):
            return found
        route, p = found
        if (topic, p) in refused:
            return ErrorCode.not_leader_or_follower  # an earlier batch must come first
        if parked and state.fences.fenced((topic, p)):
            return ErrorCode.not_leader_or_follower  # parked too long: not written, retry
        target = state.target(route.cluster_of(p), topic, p)
        space = route.space(p)
        if space is None or isinstance(target, ErrorCode):
            return target
        if starts.written_on_origin(route, p, item):
            log.info("%s[%d]: a retried write the origin holds; answered as written", topic, p)
            return split.Local(split.PRODUCE.error(reply_type, p, ErrorCode.none))
        return split.Routed(target, item, virtual.produce_fix(space))

    return place


def _fire_and_forget(
    state: State, body: ProduceRequest, keys: list[tuple[str, int]], send: split.Send
) -> None:
    """An acks=0 client gets no answer; its writes still go to the backends with
    acks=all, in the background, counted as in flight from now on (a fence that
    arrives meanwhile waits for them)."""
    stack = contextlib.ExitStack()
    fenced = any(state.fences.fenced(k) for k in keys)
    if not fenced:
        stack.enter_context(state.fences.writing(keys))

    async def forward() -> None:
        with stack:
            if fenced:
                await state.fences.admit(keys)
                stack.enter_context(state.fences.writing(keys))
            await split.produce(
                body, _place_write(state, body, set()), send, on_failure=state.failed
            )

    asyncio.get_running_loop().create_task(forward()).add_done_callback(quiet)


def _produce_failed(state: State, target: split.Target, exc: Exception) -> ErrorCode:
    """A write that reached the backend and got no answer may be in its log: the
    client must retry it as possibly written (same sequence numbers, so the broker
    can recognise it), never as surely refused."""
    code = state.failed(target, exc)
    if isinstance(exc, BackendUnavailable) and exc.sent:
        return ErrorCode.request_timed_out
    return code


async def _for_cluster(state: State, cluster: str, body: ProduceRequest) -> ProduceRequest:
    """An idempotent producer's batches with the producer id ``cluster`` knows."""
    if cluster == state.group_home.name or state.producer_ids is None:
        return body
    client = next(
        (
            found
            for topic in body.topic_data
            for p in topic.partition_data
            if p.records and (found := batches.producer_of(p.records))
        ),
        None,
    )
    if client is None:
        return body
    pid, epoch = await state.producer_ids.on(client, cluster)
    return dataclasses.replace(
        body,
        topic_data=tuple(
            dataclasses.replace(
                topic,
                partition_data=tuple(
                    dataclasses.replace(
                        p, records=Records(batches.with_producer(p.records, pid, epoch))
                    )
                    if p.records
                    else p
                    for p in topic.partition_data
                ),
            )
            for topic in body.topic_data
        ),
    )


def with_acks_all(request: ProduceRequest) -> ProduceRequest:
    """A Produce request as backends get it: acks=all whatever the client asked (seed
    000's question 2: a write a leader alone acknowledged is lost when leadership moves,
    migration or not)."""
    return request if int(request.acks) == -1 else dataclasses.replace(request, acks=-1)


def _writes(body: ProduceRequest) -> list[Write]:
    """The idempotent writes of a Produce request, one per partition."""
    found = []
    for topic in body.topic_data:
        for p in topic.partition_data:
            if p.records and (sequence := batches.sequence_of(p.records)):
                pid, epoch, first = sequence
                found.append(Write(topic.name, int(p.index), (pid, epoch), first))
    return found


def _guarded(answer: ProduceResponse, writes: list[Write], guard: SequenceGuard) -> ProduceResponse:
    """``answer`` with each write's error code as the guard says the client must see it
    (rebuilt only in the rare case that one changes)."""
    if not writes:
        return answer
    by_key = {(w.topic, w.partition): w for w in writes}
    changed: dict[tuple[str, int], ErrorCode] = {}
    for topic in answer.responses:
        for reply in topic.partition_responses:
            key = (topic.name, int(reply.index))
            if key in by_key:
                code = guard.answered(by_key[key], reply.error_code)
                if code == ErrorCode.out_of_order_sequence_number:
                    log.warning(
                        "%s[%d]: the backend refused sequence %d of producer %d as out of "
                        "order; the client will bump its epoch",
                        *key, by_key[key].sequence, by_key[key].producer[0],
                    )  # fmt: skip
                if code != reply.error_code:
                    changed[key] = code
    if not changed:
        return answer

    def partition(topic: str, reply: ProducePartitionResponse) -> ProducePartitionResponse:
        code = changed.get((topic, int(reply.index)))
        return (
            reply if code is None else dataclasses.replace(reply, error_code=code, base_offset=-1)
        )

    return dataclasses.replace(
        answer,
        responses=tuple(
            dataclasses.replace(
                topic,
                partition_responses=tuple(
                    partition(topic.name, p) for p in topic.partition_responses
                ),
            )
            for topic in answer.responses
        ),
    )
