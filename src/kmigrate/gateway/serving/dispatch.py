"""What the gateway answers to each request a client sends: the request goes to the
module of its API family, each working on the instance's state
(kmigrate.gateway.serving.state).

* ApiVersions, Metadata: kmigrate.gateway.serving.metadata
* Produce: kmigrate.gateway.serving.produce
* Fetch: kmigrate.gateway.serving.fetch
* ListOffsets, OffsetForLeaderEpoch: kmigrate.gateway.serving.offsets
* FindCoordinator, the group APIs, InitProducerId: kmigrate.gateway.serving.groups
* AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit:
  kmigrate.gateway.serving.transactions
"""

from __future__ import annotations

from typing import Any

from kmigrate.gateway.protocol.wire import Request
from kmigrate.gateway.serving import fetch, groups, metadata, offsets, produce, transactions
from kmigrate.gateway.serving.sequences import SequenceGuard
from kmigrate.gateway.serving.state import State


class Gateway(State):
    """One gateway instance's view of the world and its answers."""

    async def handle(self, request: Request, guard: SequenceGuard | None = None) -> Any:
        """The answer to ``request`` (None: the client expects none, acks=0); ``guard``
        follows the idempotent writes of the client connection it came on."""
        body = request.body
        match request.api_key:
            case 18:
                return metadata.api_versions(self, request)
            case 3:
                return await metadata.metadata(self, body)
            case 0:
                return await produce.produce(self, body, guard or SequenceGuard())
            case 1:
                return await fetch.fetch(self, body)
            case 2:
                return await offsets.list_offsets(self, body)
            case 23:
                return await offsets.offset_for_leader_epoch(self, body)
            case 10:
                return groups.find_coordinator(self, body)
            case 15:
                return await groups.describe_groups(self, body)
            case 16:
                return await groups.list_groups(self, body)
            case 22:
                return await groups.init_producer_id(self, body)
            case api if api in groups.GROUP_APIS:
                return await groups.to_coordinator(self, body.group_id, body)
            case api if api in transactions.APIS:
                return await transactions.answer(self, api, body)
        raise AssertionError(f"no handler for api {request.api_key}")
