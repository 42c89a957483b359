"""ListOffsets and OffsetForLeaderEpoch, as the gateway answers them: split by partition
to the backend broker leading each (kmigrate.gateway.serving.split). A partition that
moved answers in virtual offsets: by timestamp, a lookup that finds nothing in one
segment asks the next; its leader epochs were never truncated in the virtual log, so the
gateway answers OffsetForLeaderEpoch for it itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.partition_moves import Segment
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.serving import marked, split, virtual
from kmigrate.gateway.serving.messages import (
    LeaderEpochRequest,
    LeaderEpochResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kmigrate.gateway.serving.state import State

_MORE_SEGMENTS = 3  # by-timestamp lookups ask at most this many segments after the first


async def list_offsets(state: State, body: ListOffsetsRequest) -> ListOffsetsResponse:
    """ListOffsets; a by-timestamp lookup of a moved partition that finds nothing in one
    segment asks the next (virtual offsets grow with time across them)."""
    answer = await _ask(state, body, 0)
    for attempt in range(1, _MORE_SEGMENTS + 1):
        again = _again(state.routes, body, answer, attempt)
        if again is None:
            break
        more = await _ask(state, again, attempt)
        answer = _replaced(answer, more)
    return answer


async def offset_for_leader_epoch(state: State, body: LeaderEpochRequest) -> LeaderEpochResponse:
    """OffsetForLeaderEpoch; a moved partition is answered by the gateway itself."""
    reply_type = split.reply_partition_type(split.LEADER_EPOCH, body)

    def place(topic: str, item: Any) -> split.Target | split.Local | ErrorCode:
        found = state.route(topic, item, "partition")
        if isinstance(found, ErrorCode):
            return found
        route, p = found
        if p not in route.migrations:
            return state.target(route.cluster_of(p), topic, p)
        return split.Local(virtual.leader_epoch_answer(reply_type, item))

    return await split.leader_epoch(
        body, place, state.send, on_failure=state.failed, on_errors=state.answered
    )


async def _ask(state: State, body: ListOffsetsRequest, attempt: int) -> ListOffsetsResponse:
    """ListOffsets of ``body``, by timestamp in the ``attempt``-th readable segment."""

    async def send(target: split.Target, part: ListOffsetsRequest) -> ListOffsetsResponse:
        answer: ListOffsetsResponse = await state.send(target, part)
        # The latest offset is the high watermark (or the last stable offset): a batch
        # boundary, safe to store; other lookups name a record, perhaps inside a batch.
        latest = {
            (t.name, int(p.partition_index))
            for t in part.topics
            for p in t.partitions
            if int(p.timestamp) == virtual.LATEST
        }
        return await marked.within_stored_marks(
            state, split.LIST_OFFSETS, "offset", target[0], answer, latest
        )

    return await split.list_offsets(
        body,
        _place_lookup(state, attempt),
        send,
        on_failure=state.failed,
        on_errors=state.answered,
    )


def _place_lookup(state: State, attempt: int) -> split.Place:
    def lookup(space: list[Segment], item: Any) -> virtual.Part | ErrorCode:
        return virtual.list_offsets(space, item, attempt)

    return lambda topic, item: state.placed(topic, item, "partition_index", lookup)


def _again(
    routes: RoutingTable, body: ListOffsetsRequest, answer: ListOffsetsResponse, attempt: int
) -> ListOffsetsRequest | None:
    """The by-timestamp lookups of ``body`` to ask the next segment, or None."""
    replies = {(t.name, int(r.partition_index)): r for t in answer.topics for r in t.partitions}
    topics = []
    for topic in body.topics:
        route = routes.topics.get(topic.name)
        chosen = []
        for item in topic.partitions:
            p = int(item.partition_index)
            space = route.space(p) if route else None
            reply = replies.get((topic.name, p))
            if space and reply is not None and virtual.needs_next(space, item, reply, attempt - 1):
                chosen.append(item)
        if chosen:
            topics.append(dataclasses.replace(topic, partitions=tuple(chosen)))
    return dataclasses.replace(body, topics=tuple(topics)) if topics else None


def _replaced(answer: ListOffsetsResponse, more: ListOffsetsResponse) -> ListOffsetsResponse:
    """``answer`` with the partitions ``more`` answers taken from ``more``."""
    better = {(t.name, int(r.partition_index)): r for t in more.topics for r in t.partitions}
    return dataclasses.replace(
        answer,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    better.get((t.name, int(r.partition_index)), r) for r in t.partitions
                ),
            )
            for t in answer.topics
        ),
    )
