"""A routed topic's copy on the group home: Kafka keeps committed offsets only for
partitions it has, so a topic created or grown through the gateway is created or grown
on the group home too, with the same partition count (as `gateway route set` does)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.protocol.backend import Backend, BackendUnavailable
from kmigrate.gateway.protocol.entities import item_type
from kmigrate.gateway.serving.state import State
from kmigrate.kafka.protocol.wire import request_type

_TIMEOUT = datetime.timedelta(seconds=30)
_LEARN_TRIES = 10


async def count_of(state: State, cluster: str, asked: Any, answer: Any) -> int | None:
    """How many partitions ``cluster`` just created for topic ``asked`` (a CreateTopics
    item and its answer): from the answer (v5+), the request, or the cluster's metadata."""
    if int(getattr(answer, "num_partitions", -1)) > 0:
        return int(answer.num_partitions)
    if int(asked.num_partitions) > 0:
        return int(asked.num_partitions)
    return await _learned_count(state.backends[cluster], str(asked.name))


async def ensure(state: State, cluster: str, name: str, count: int | None) -> str | None:
    """Topic ``name`` with ``count`` partitions on the group home (unless ``cluster`` is
    the group home); why not, or None."""
    home = state.group_home
    if home.name == cluster:
        return None
    if count is None:
        return f"created on {cluster}, but its partition count could not be learned"
    version = min(home.versions.get(19, (0, 7))[1], 7)
    if version < 4:
        return f"the group home {home.name} is too old to create topics with default replicas"
    request_cls = request_type(19, version)
    topic = item_type(request_cls, "topics")(
        name=name, num_partitions=count, replication_factor=-1, assignments=(), configs=()
    )
    request = request_cls(topics=(topic,), timeout=_TIMEOUT, validate_only=False)
    return await _matched(home, cluster, name, count, request, ErrorCode.topic_already_exists)


async def grow(state: State, cluster: str, topic: Any, body: Any) -> str | None:
    """The group home's copy of ``topic`` (a CreatePartitions item of ``body``) grown to
    the same count (unless ``cluster`` is the group home); why not, or None."""
    home = state.group_home
    if home.name == cluster:
        return None
    item = dataclasses.replace(topic, assignments=None)
    request = dataclasses.replace(body, topics=(item,), validate_only=False)
    name, count = str(topic.name), int(topic.count)
    return await _matched(home, cluster, name, count, request, ErrorCode.invalid_partitions)


async def _matched(
    home: Backend, cluster: str, name: str, count: int, request: Any, exists: ErrorCode
) -> str | None:
    """``request`` sent to the group home; ``exists`` answered is fine when the home's
    copy already has ``count`` partitions."""
    try:
        answer = await home.call_controller(request)
    except BackendUnavailable as exc:
        return f"done on {cluster}, but the group home {home.name} does not answer: {exc}"
    item = (getattr(answer, "topics", None) or answer.results)[0]
    if item.error_code == ErrorCode.none:
        await learned(home, name, count)
        return None
    if item.error_code == exists and await _learned_count(home, name) == count:
        return None
    why = item.error_message or item.error_code.name
    return (
        f"done on {cluster}, but not on the group home {home.name}, where committed offsets "
        f"live ({why}); make its partition count {count} there"
    )


async def learned(backend: Backend, name: str, at_least: int = 1) -> None:
    """Return once ``backend``'s metadata shows ``name`` with ``at_least`` partitions,
    or after a few tries: a broker learns what its controller did a moment later, and
    the gateway answers partitions from what brokers say."""
    await _learned_count(backend, name, at_least)


async def _learned_count(backend: Backend, name: str, at_least: int = 1) -> int | None:
    """``name``'s partition count as ``backend``'s metadata says (a new topic may take
    a moment to reach every broker's metadata)."""
    for attempt in range(_LEARN_TRIES):
        try:
            await backend.refresh()
        except BackendUnavailable:
            return None
        if backend.view.partitions.get(name, 0) >= at_least:
            return backend.view.partitions[name]
        await asyncio.sleep(0.05 * (attempt + 1))
    return backend.view.partitions.get(name)
