"""DeleteRecords and DescribeProducers, as the gateway answers them: split by partition
to the backend broker leading each (kmigrate.gateway.serving.split).

* DeleteRecords of a moved partition: offsets are virtual. Records can be deleted only
  in its current segment, and only when no earlier segment is still readable (the
  origin aged, or skipped with --ignore-origin): the offset becomes the current
  cluster's, the low watermark virtual again. Otherwise POLICY_VIOLATION (the answer
  has no message field: the reason is logged): deleting on the origin too would be
  a second, separate deletion the client did not ask for.
* DescribeProducers: from the cluster that holds the partition now. Producer ids are
  that backend's: on the group home the clients' own, elsewhere the ids the gateway
  translates them to (kmigrate.gateway.control.producers).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.partition_moves import Segment
from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving import split, virtual
from kmigrate.gateway.serving.state import State

log = logging.getLogger("kmigrate.gateway.admin")
DELETE_RECORDS = split.Shape(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partition_index",
    error_fields=(("low_watermark", -1),),
)  # fmt: skip
HIGH_WATERMARK = -1  # DeleteRecords' "everything written so far"


def delete_point(space: Sequence[Segment], item: Any) -> virtual.Part | ErrorCode:
    """Where a DeleteRecords of a moved partition (``item``: its offset virtual) is
    done: its current cluster, the offset made that cluster's. Pure."""
    last = space[-1]
    offset = int(item.offset)
    if any(s.readable for s in space[:-1]):
        return ErrorCode.policy_violation
    if offset != HIGH_WATERMARK and offset < last.start:
        return ErrorCode.offset_out_of_range
    physical = offset if offset == HIGH_WATERMARK else last.to_physical(offset)

    def fix(reply: Any) -> Any:
        low = int(reply.low_watermark)
        return reply if low < 0 else dataclasses.replace(reply, low_watermark=last.to_virtual(low))

    return virtual.Part(last.cluster, dataclasses.replace(item, offset=physical), fix)


async def delete_records(state: State, body: Any) -> Any:
    await state.routes_naming(t.name for t in body.topics)

    def place(topic: str, item: Any) -> split.Target | split.Routed | ErrorCode:
        def moved(space: list[Segment], item: Any) -> virtual.Part | ErrorCode:
            part = delete_point(space, item)
            if part == ErrorCode.policy_violation:
                log.info(
                    "DeleteRecords of %s[%d] refused: its origin's records below the move's "
                    "offset are still served (delete them there, or wait for the origin to "
                    "age)",
                    topic,
                    int(item.partition_index),
                )
            return part

        return state.placed(topic, item, "partition_index", moved)

    return await split.split_call(
        DELETE_RECORDS, body, place, state.send, on_failure=state.failed, on_errors=state.answered
    )


async def describe_producers(state: State, body: Any) -> Any:
    """Each partition's active producers, asked of the broker leading it now."""
    reply = response_class_of(body)
    partition_cls = item_type(item_type(reply, "topics"), "partitions")
    await state.routes_naming(t.name for t in body.topics)
    found, parts = _place_producers(state, body, partition_cls)
    targets = list(parts)
    answers = await asyncio.gather(
        *(_producers_of(state, body, t, parts[t]) for t in targets), return_exceptions=True
    )
    for target, answer in zip(targets, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, BackendUnavailable):
                raise answer
            code = state.failed(target, answer)
            for name, ps in parts[target].items():
                found |= {(name, p): _producers_error(partition_cls, p, code) for p in ps}
            continue
        for topic in answer.topics:
            found |= {(topic.name, int(r.partition_index)): r for r in topic.partitions}
    topic_cls = item_type(reply, "topics")
    topics = tuple(
        topic_cls(
            name=t.name,
            partitions=tuple(
                found.get((t.name, int(p)))
                or _producers_error(partition_cls, int(p), ErrorCode.unknown_server_error)
                for p in t.partition_indexes
            ),
        )
        for t in body.topics
    )
    return build(reply, throttle_time=NO_THROTTLE, topics=topics)


def _place_producers(
    state: State, body: Any, partition_cls: type
) -> tuple[dict[tuple[str, int], Any], dict[split.Target, dict[str, list[int]]]]:
    """The partitions answered at once (errors), and the others by leading broker."""
    found: dict[tuple[str, int], Any] = {}
    parts: dict[split.Target, dict[str, list[int]]] = {}
    for topic in body.topics:
        route = state.routes.topics.get(topic.name)
        for p in topic.partition_indexes:
            where = state.target(route.cluster_of(p), topic.name, p) if route else None
            if isinstance(where, tuple):
                parts.setdefault(where, {}).setdefault(topic.name, []).append(int(p))
                continue
            code = where if isinstance(where, ErrorCode) else ErrorCode.unknown_topic_or_partition
            found[(topic.name, int(p))] = _producers_error(partition_cls, int(p), code)
    return found, parts


async def _producers_of(
    state: State, body: Any, target: split.Target, by_topic: dict[str, list[int]]
) -> Any:
    topic_cls: Any = item_type(body.__class__, "topics")
    request = dataclasses.replace(
        body,
        topics=tuple(topic_cls(name=n, partition_indexes=tuple(ps)) for n, ps in by_topic.items()),
    )
    return await state.send(target, request)


def _producers_error(partition_cls: type, p: int, code: ErrorCode) -> Any:
    return build(
        partition_cls, partition_index=p, error_code=code, error_message=None, active_producers=()
    )
