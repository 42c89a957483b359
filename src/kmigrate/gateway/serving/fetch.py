"""Fetch, as the gateway answers it: split by partition to the backend broker leading
each (kmigrate.gateway.serving.split); a partition that moved is read in virtual offsets
from the segment that holds the offset (kmigrate.gateway.serving.virtual). Fetch
sessions are not kept (every fetch is a full one), and answers name no backend broker.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.protocol.entities import field_names
from kmigrate.gateway.serving import marked, split, virtual
from kmigrate.gateway.serving.messages import FetchRequest, FetchResponse
from kmigrate.gateway.serving.state import State

FETCH_MARGIN_S = 2.0


async def fetch(state: State, body: FetchRequest) -> FetchResponse:
    """The answer to a Fetch request; a backend that hangs holds up only its own
    partitions (each part gets the client's wait plus a margin, then a retriable error)."""
    deadline = body.max_wait.total_seconds() + FETCH_MARGIN_S

    async def send(target: split.Target, part: FetchRequest) -> FetchResponse:
        try:
            answer: FetchResponse = await asyncio.wait_for(state.send(target, part), deadline)
        except TimeoutError:
            raise BackendUnavailable(f"no fetch answer within {deadline:g}s") from None
        # its records end at the high watermark (kmigrate.gateway.serving.marked)
        return await marked.within_stored_marks(
            state, split.FETCH, "high_watermark", target[0], answer
        )

    answer = await split.fetch(
        body,
        lambda topic, item: state.placed(topic, item, "partition", virtual.fetch),
        send,
        adjust=_no_session,
        on_failure=state.failed,
        on_errors=state.answered,
    )
    # Backend broker ids mean nothing to clients: no read replicas, no leader hints.
    topics = tuple(
        dataclasses.replace(topic, partitions=tuple(_without_hints(p) for p in topic.partitions))
        for topic in answer.responses
    )
    return dataclasses.replace(answer, responses=topics, session_id=0, error_code=ErrorCode.none)


def _no_session(part: FetchRequest) -> FetchRequest:
    return dataclasses.replace(part, session_id=0, session_epoch=-1, forgotten_topics_data=())


def _without_hints(partition: Any) -> Any:
    """``partition`` without a read replica or leader hint naming a backend broker."""
    names = field_names(partition.__class__)
    changes: dict[str, Any] = {}
    if "preferred_read_replica" in names and partition.preferred_read_replica != -1:
        changes["preferred_read_replica"] = -1
    if "current_leader" in names and partition.current_leader.leader_id != -1:
        changes["current_leader"] = type(partition.current_leader)()
    return dataclasses.replace(partition, **changes) if changes else partition
