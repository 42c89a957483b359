"""Produce, Fetch, ListOffsets and OffsetForLeaderEpoch name partitions of many topics in
one request. The gateway splits such a request by the backend broker that leads each
partition, sends the parts at once, and merges the answers back in the client's order.
A partition the gateway cannot place (no route, no leader known, its broker
unreachable) gets a retriable error of its own; the others are not held back."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records

from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving.messages import (
    FetchRequest,
    FetchResponse,
    LeaderEpochRequest,
    LeaderEpochResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ProduceRequest,
    ProduceResponse,
)

Target = tuple[str, int]  # (backend cluster, broker id)
EMPTY = Records(b"")


@dataclass(frozen=True)
class Shape:
    """Where one API keeps its topics and partitions, in requests and responses."""

    topics: str
    name: str
    partitions: str
    index: str
    reply_topics: str
    reply_name: str
    reply_index: str
    reply_partitions: str = "partitions"
    error_fields: tuple[tuple[str, Any], ...] = ()  # besides the error code

    def error(self, reply_partition_type: type, partition: int, code: ErrorCode) -> Any:
        return build(
            reply_partition_type,
            **{self.reply_index: partition, "error_code": code},
            **dict(self.error_fields),
        )


PRODUCE = Shape(
    "topic_data",
    "name",
    "partition_data",
    "index",
    "responses",
    "name",
    "index",
    reply_partitions="partition_responses",
    error_fields=(("base_offset", -1), ("record_errors", ())),
)
FETCH = Shape(
    "topics",
    "topic",
    "partitions",
    "partition",
    "responses",
    "topic",
    "partition_index",
    # Empty records, not null: librdkafka refuses a null record set (MessageSetSize -1) as
    # a parse failure, never sees the error code, reconnects and asks again at once.
    error_fields=(("high_watermark", -1), ("aborted_transactions", None), ("records", EMPTY)),
)
LIST_OFFSETS = Shape(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partition_index"
)
LEADER_EPOCH = Shape("topics", "topic", "partitions", "partition", "topics", "topic", "partition")


@dataclass(frozen=True)
class Routed:
    """A partition sent to ``target`` as ``item`` (rewritten for that backend), its
    answer passed through ``fix`` on the way back (for partitions that migrated: offsets
    of the backend made virtual)."""

    target: Target
    item: Any
    fix: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Local:
    """A partition the gateway answers itself."""

    reply: Any


Place = Callable[[str, Any], "Target | Routed | Local | ErrorCode"]
Send = Callable[[Target, Any], Awaitable[Any]]
OnFailure = Callable[[Target, Exception], ErrorCode]
OnErrors = Callable[[Target, set[ErrorCode]], None]


def _unknown_failure(_target: Target, _exc: Exception) -> ErrorCode:
    return ErrorCode.unknown_server_error


def _no_errors(_target: Target, _codes: set[ErrorCode]) -> None:
    pass


@dataclass
class _Plan:
    """A request taken apart: the client's order, the part per broker, early errors."""

    order: list[tuple[str, list[int]]]
    parts: dict[Target, dict[str, list[Any]]]
    topics: dict[str, Any]
    errors: dict[tuple[str, int], ErrorCode]
    fixes: dict[tuple[str, int], Callable[[Any], Any]]
    local: dict[tuple[str, int], Any]


def _take_apart(shape: Shape, request: Any, place: Place) -> _Plan:
    plan = _Plan([], {}, {}, {}, {}, {})
    for topic in getattr(request, shape.topics):
        name = getattr(topic, shape.name)
        plan.topics[name] = topic
        indexes = []
        for partition in getattr(topic, shape.partitions):
            index = int(getattr(partition, shape.index))
            indexes.append(index)
            where = place(name, partition)
            if isinstance(where, ErrorCode):
                plan.errors[(name, index)] = where
            elif isinstance(where, Local):
                plan.local[(name, index)] = where.reply
            elif isinstance(where, Routed):
                plan.parts.setdefault(where.target, {}).setdefault(name, []).append(where.item)
                if where.fix is not None:
                    plan.fixes[(name, index)] = where.fix
            else:
                plan.parts.setdefault(where, {}).setdefault(name, []).append(partition)
        plan.order.append((name, indexes))
    return plan


async def split_call(
    shape: Shape,
    request: Any,
    place: Place,
    send: Send,
    adjust: Callable[[Any], Any] = lambda r: r,
    on_failure: OnFailure = _unknown_failure,
    expect_response: bool = True,
    on_errors: OnErrors = _no_errors,
) -> Any:
    """``request`` answered partition by partition from the brokers ``place`` names;
    ``on_errors`` hears the error codes each broker answered for its partitions."""
    plan = _take_apart(shape, request, place)

    def part_request(by_topic: dict[str, list[Any]]) -> Any:
        topics = tuple(
            dataclasses.replace(plan.topics[name], **{shape.partitions: tuple(chosen)})
            for name, chosen in by_topic.items()
        )
        return adjust(dataclasses.replace(request, **{shape.topics: topics}))

    targets = list(plan.parts)
    answers = await asyncio.gather(
        *(send(t, part_request(plan.parts[t])) for t in targets), return_exceptions=True
    )
    if not expect_response:
        return None
    found: dict[tuple[str, int], Any] = {}
    first = None
    for target, answer in zip(targets, answers, strict=True):
        if isinstance(answer, Exception):
            code = on_failure(target, answer)
            for name, chosen in plan.parts[target].items():
                for partition in chosen:
                    plan.errors[(name, int(getattr(partition, shape.index)))] = code
            continue
        if isinstance(answer, BaseException):
            raise answer
        first = first or answer
        codes = set()
        for topic in getattr(answer, shape.reply_topics):
            name = getattr(topic, shape.reply_name)
            for partition in getattr(topic, shape.reply_partitions):
                key = (name, int(getattr(partition, shape.reply_index)))
                fix = plan.fixes.get(key)
                found[key] = fix(partition) if fix and partition.error_code == 0 else partition
                codes.add(partition.error_code)
        codes.discard(ErrorCode.none)
        if codes:
            on_errors(target, codes)
    return _merged(shape, request, plan, found, first)


# ---------------------------------------------------------------- the four split APIs, typed


async def produce(
    request: ProduceRequest,
    place: Place,
    send: Send,
    on_failure: OnFailure = _unknown_failure,
    on_errors: OnErrors = _no_errors,
) -> ProduceResponse:
    """A Produce request answered partition by partition (see split_call)."""
    answer: ProduceResponse = await split_call(
        PRODUCE, request, place, send, on_failure=on_failure, on_errors=on_errors
    )
    return answer


async def fetch(
    request: FetchRequest,
    place: Place,
    send: Send,
    adjust: Callable[[FetchRequest], FetchRequest],
    on_failure: OnFailure = _unknown_failure,
    on_errors: OnErrors = _no_errors,
) -> FetchResponse:
    """A Fetch request answered partition by partition, each part passed through
    ``adjust`` (see split_call)."""
    answer: FetchResponse = await split_call(
        FETCH, request, place, send, adjust=adjust, on_failure=on_failure, on_errors=on_errors
    )
    return answer


async def list_offsets(
    request: ListOffsetsRequest,
    place: Place,
    send: Send,
    on_failure: OnFailure = _unknown_failure,
    on_errors: OnErrors = _no_errors,
) -> ListOffsetsResponse:
    """A ListOffsets request answered partition by partition (see split_call)."""
    answer: ListOffsetsResponse = await split_call(
        LIST_OFFSETS, request, place, send, on_failure=on_failure, on_errors=on_errors
    )
    return answer


async def leader_epoch(
    request: LeaderEpochRequest,
    place: Place,
    send: Send,
    on_failure: OnFailure = _unknown_failure,
    on_errors: OnErrors = _no_errors,
) -> LeaderEpochResponse:
    """An OffsetForLeaderEpoch request answered partition by partition (see split_call)."""
    answer: LeaderEpochResponse = await split_call(
        LEADER_EPOCH, request, place, send, on_failure=on_failure, on_errors=on_errors
    )
    return answer


def reply_partition_type(shape: Shape, request: Any) -> type:
    """The type of one partition's answer to ``request``."""
    topic_type = item_type(response_class_of(request), shape.reply_topics)
    found: type = item_type(topic_type, shape.reply_partitions)
    return found


def _merged(
    shape: Shape, request: Any, plan: _Plan, found: dict[tuple[str, int], Any], first: Any
) -> Any:
    reply_type = response_class_of(request)
    topic_type = item_type(reply_type, shape.reply_topics)
    partition_type = item_type(topic_type, shape.reply_partitions)

    def answer(name: str, index: int) -> Any:
        code = plan.errors.get((name, index), ErrorCode.unknown_server_error)
        return (
            found.get((name, index))
            or plan.local.get((name, index))
            or shape.error(partition_type, index, code)
        )

    merged = tuple(
        build(
            topic_type,
            **{
                shape.reply_name: name,
                shape.reply_partitions: tuple(answer(name, i) for i in indexes),
            },
        )
        for name, indexes in plan.order
    )
    if first is not None:
        return dataclasses.replace(first, **{shape.reply_topics: merged})
    return build(
        reply_type,
        **{shape.reply_topics: merged},
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
    )
