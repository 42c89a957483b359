"""Group requests, as the gateway answers them: FindCoordinator names this instance, for
groups and transactional ids alike; the group APIs go to the group's coordinator in the
"group home" cluster, found again when it moved. An idempotent producer gets its id from
the group home, a transactional one from its transaction coordinator there
(kmigrate.gateway.serving.transactions). Other coordinator kinds (share groups) are
refused with a message saying why; the KIP-848 consumer protocol is not listed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.protocol.entities import (
    NO_THROTTLE,
    build,
    field_names,
    item_type,
    response_class_of,
)
from kmigrate.gateway.serving.state import State, quietly

log = logging.getLogger("kmigrate.gateway.handlers")  # as before the move (logs)

GROUP, TRANSACTION = 0, 1  # FindCoordinator key types the gateway serves
NOT_COORDINATED = "the kmigrate gateway coordinates consumer groups and transactions only"
GROUP_APIS = {8, 9, 11, 12, 13, 14}  # sent to the group's coordinator as they are
_MOVED_COORDINATOR = {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}


def find_coordinator(state: State, body: Any) -> Any:
    """This instance coordinates every group and transactional id: it forwards their
    requests to their coordinators on the group home, whichever instance a client asks."""
    reply = response_class_of(body)
    me = state.me
    refused = int(getattr(body, "key_type", GROUP)) not in (GROUP, TRANSACTION)
    code = ErrorCode.invalid_request if refused else ErrorCode.none
    message = NOT_COORDINATED if refused else None
    if "coordinator_keys" in field_names(body.__class__):
        coordinator = item_type(reply, "coordinators")
        return build(
            reply,
            throttle_time=NO_THROTTLE,
            coordinators=tuple(
                build(
                    coordinator,
                    key=k,
                    node_id=me.node_id,
                    host=me.host,
                    port=me.port,
                    error_code=code,
                    error_message=message,
                )
                for k in body.coordinator_keys
            ),
        )
    return build(
        reply,
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        node_id=me.node_id if not refused else -1,
        host=me.host if not refused else "",
        port=me.port if not refused else -1,
    )


async def to_coordinator(state: State, key: str, body: Any, key_type: int = GROUP) -> Any:
    """``body`` answered by the coordinator of group (or transactional id) ``key`` in the
    group home cluster."""
    home = state.group_home
    for attempt in range(2):
        try:
            broker = await home.coordinator(key, key_type)
            answer = await home.call_broker(
                broker, body, identity=state.principals.identity(home.name)
            )
        except BackendUnavailable as exc:
            home.forget_coordinator(key, key_type)
            if attempt:
                raise
            log.info("%s: coordinator unavailable (%s); looking it up again", key, exc)
            await quietly(home.refresh())
            continue
        if _mentions(answer, _MOVED_COORDINATOR):
            home.forget_coordinator(key, key_type)
        return answer
    raise AssertionError("unreachable")


async def describe_groups(state: State, body: Any) -> Any:
    """Each group described by its own coordinator, answers merged."""
    answers = await asyncio.gather(
        *(to_coordinator(state, g, dataclasses.replace(body, groups=(g,))) for g in body.groups)
    )
    merged = tuple(group for answer in answers for group in answer.groups)
    return (
        dataclasses.replace(answers[0], groups=merged)
        if answers
        else build(response_class_of(body), throttle_time=NO_THROTTLE, groups=())
    )


async def list_groups(state: State, body: Any) -> Any:
    """The groups of every broker of the group home."""
    home = state.group_home
    brokers = list(home.view.brokers)
    acting = state.principals.identity(home.name)
    answers = await asyncio.gather(*(home.call_broker(b, body, identity=acting) for b in brokers))
    groups = tuple(g for a in answers for g in a.groups)
    return build(
        response_class_of(body),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        groups=groups,
    )


async def init_producer_id(state: State, body: Any) -> Any:
    """Idempotent producers get their id from the group home; a transactional producer
    from its transaction coordinator there (transactions run on the group home)."""
    if body.transactional_id:
        return await to_coordinator(state, body.transactional_id, body, TRANSACTION)
    return await state.group_home.call_any(body)


def _mentions(entity: Any, codes: set[ErrorCode]) -> bool:
    """Whether any error code in ``entity`` (nested) is one of ``codes``."""
    if isinstance(entity, ErrorCode):
        return entity in codes
    if isinstance(entity, tuple):
        return any(_mentions(e, codes) for e in entity)
    if dataclasses.is_dataclass(entity) and not isinstance(entity, type):
        return any(
            _mentions(getattr(entity, f.name), codes)
            for f in dataclasses.fields(entity)
            if f.name not in ("records", "member_metadata", "member_assignment", "metadata")
        )
    return False
