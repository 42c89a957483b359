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
* DeleteGroups, OffsetDelete: kmigrate.gateway.serving.group_admin
* DescribeCluster, DescribeTopicPartitions, ListPartitionReassignments:
  kmigrate.gateway.serving.cluster
* DescribeConfigs, AlterConfigs, IncrementalAlterConfigs:
  kmigrate.gateway.serving.admin_configs
* CreateTopics, DeleteTopics, CreatePartitions: kmigrate.gateway.serving.admin_topics
* DeleteRecords, DescribeProducers: kmigrate.gateway.serving.admin_records
* DescribeAcls, CreateAcls, DeleteAcls (refused): kmigrate.gateway.serving.acls
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kmigrate.gateway.serving import (
    acls,
    admin_configs,
    admin_records,
    admin_topics,
    cluster,
    fetch,
    group_admin,
    groups,
    metadata,
    offsets,
    produce,
    transactions,
)
from kmigrate.gateway.serving.sequences import SequenceGuard
from kmigrate.gateway.serving.state import State
from kmigrate.kafka.protocol.wire import Request


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
        return await self._handle_admin(request.api_key, body)

    async def _handle_admin(self, api_key: int, body: Any) -> Any:
        """The answer to an admin request (topics, configs, records, the cluster)."""
        handler = _ADMIN.get(api_key)
        if handler is None:
            raise AssertionError(f"no handler for api {api_key}")
        answer = handler(self, body)
        return await answer if inspect.isawaitable(answer) else answer


_ADMIN: dict[int, Callable[[State, Any], Any]] = {
    19: admin_topics.create_topics,
    20: admin_topics.delete_topics,
    37: admin_topics.create_partitions,
    32: admin_configs.describe_configs,
    33: admin_configs.alter_configs,
    44: admin_configs.alter_configs,
    21: admin_records.delete_records,
    61: admin_records.describe_producers,
    60: cluster.describe_cluster,
    75: cluster.describe_topic_partitions,
    46: lambda _state, body: cluster.list_partition_reassignments(body),
    42: group_admin.delete_groups,
    47: group_admin.offset_delete,
    29: lambda _state, body: acls.refuse(body),
    30: lambda _state, body: acls.refuse(body),
    31: lambda _state, body: acls.refuse(body),
}
