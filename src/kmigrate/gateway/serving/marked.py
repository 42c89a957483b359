"""Answers that carry offsets a client may go on from (a fetch's high watermark, a
ListOffsets offset) are given only once the instance's stored high watermarks cover
them (kmigrate.gateway.control.marks): a failover starts the target's offsets at a
stored mark, so a consumer holding an offset beyond it would fetch past the target's
end and, reset, read the same offsets again as other records.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Container
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from kmigrate.gateway.serving import split
from kmigrate.gateway.serving.state import State

STORE_WAIT_S = 2.0  # for the marks an answer carries to be stored
RETRY = ErrorCode.not_leader_or_follower  # the client learns metadata again and retries
Answer = TypeVar("Answer")


async def within_stored_marks(
    state: State,
    shape: split.Shape,
    field: str,
    cluster: str,
    answer: Answer,
    only: Container[tuple[str, int]] | None = None,
) -> Answer:
    """``answer`` (from a broker of ``cluster``) once the offset in ``field`` of each
    partition it answers without error is stored as that partition's mark. Not stored
    within STORE_WAIT_S (ZooKeeper away or slow): those partitions answer a retriable
    error instead, holding back nothing but themselves. ``only``: the (topic, partition)
    pairs whose offset is a high watermark (a batch boundary), when not all are."""
    needs = [
        ((cluster, name, int(getattr(reply, shape.reply_index))), int(getattr(reply, field)))
        for name, reply in _replies(shape, answer)
        if reply.error_code == ErrorCode.none
        and int(getattr(reply, field)) >= 0
        and (only is None or (name, int(getattr(reply, shape.reply_index))) in only)
    ]
    with contextlib.suppress(Exception):  # the store logs why
        await asyncio.wait_for(state.mark_store.saw_and_stored(needs), STORE_WAIT_S)
    if state.marks.covered(needs):
        return answer
    stored = {key for key, offset in needs if state.marks.covered([(key, offset)])}

    def held(name: str, reply: Any) -> Any:
        index = int(getattr(reply, shape.reply_index))
        if reply.error_code != ErrorCode.none or (cluster, name, index) in stored:
            return reply
        return shape.error(type(reply), index, RETRY)

    topics = tuple(
        dataclasses.replace(
            topic,
            **{
                shape.reply_partitions: tuple(
                    held(getattr(topic, shape.reply_name), r)
                    for r in getattr(topic, shape.reply_partitions)
                )
            },
        )
        for topic in getattr(answer, shape.reply_topics)
    )
    return dataclasses.replace(answer, **{shape.reply_topics: topics})  # type: ignore[type-var]


def _replies(shape: split.Shape, answer: Any) -> list[tuple[str, Any]]:
    return [
        (getattr(topic, shape.reply_name), reply)
        for topic in getattr(answer, shape.reply_topics)
        for reply in getattr(topic, shape.reply_partitions)
    ]
