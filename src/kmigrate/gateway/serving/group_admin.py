"""The group requests of admin tools (`kafka-consumer-groups --delete`,
`--delete-offsets`), as the gateway answers them: each group's request goes to its
coordinator in the group home cluster (kmigrate.gateway.serving.groups)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, response_class_of
from kmigrate.gateway.serving.groups import to_coordinator
from kmigrate.gateway.serving.state import State


async def delete_groups(state: State, body: Any) -> Any:
    """Each group deleted by its own coordinator, answers merged in the request's order."""
    answers = await asyncio.gather(
        *(
            to_coordinator(state, g, dataclasses.replace(body, groups_names=(g,)))
            for g in body.groups_names
        )
    )
    results = tuple(r for answer in answers for r in answer.results)
    return build(response_class_of(body), throttle_time=NO_THROTTLE, results=results)


async def offset_delete(state: State, body: Any) -> Any:
    """A group's committed offsets deleted by its coordinator."""
    return await to_coordinator(state, body.group_id, body)
