"""The gateway as a cluster of its live instances, as admin clients ask about it:

* DescribeCluster: the live instances are the brokers, the lowest id the controller,
  the cluster id the gateway's (never a backend's).
* DescribeTopicPartitions (KIP-966, Kafka 4.x's describeTopics): routed topics, each
  partition led by a live instance, its only replica (as Metadata says), paged with
  Kafka's cursor rules.
* ListPartitionReassignments: none (a partition's one replica is its gateway instance;
  backends' own reassignments are theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.placement import topic_id
from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving.metadata import cluster_id, partition_values
from kmigrate.gateway.serving.state import State

ALL_OPERATIONS = -2147483648  # "not asked for" in authorized-operations fields
BROKER_ENDPOINTS = 1  # DescribeCluster's endpoint_type: brokers (2: controllers)
MAX_PARTITIONS = 2000  # a broker's max.request.partition.size.limit default

Cursor = tuple[str, int]  # (topic, first partition)


def describe_cluster(state: State, body: Any) -> Any:
    """The live gateway instances as the cluster's brokers."""
    reply = response_class_of(body)
    instances = state.live_instances()
    if int(getattr(body, "endpoint_type", BROKER_ENDPOINTS)) != BROKER_ENDPOINTS:
        return build(
            reply,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.unsupported_endpoint_type,
            error_message="the kmigrate gateway has no controller endpoints: ask it as a broker",
            endpoint_type=body.endpoint_type,
            cluster_id=cluster_id(state),
            controller_id=-1,
            brokers=(),
            cluster_authorized_operations=ALL_OPERATIONS,
        )
    broker = item_type(reply, "brokers")
    return build(
        reply,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=BROKER_ENDPOINTS,
        cluster_id=cluster_id(state),
        controller_id=min(i.node_id for i in instances),
        brokers=tuple(
            build(broker, broker_id=i.node_id, host=i.host, port=i.port, rack=None, is_fenced=False)
            for i in instances
        ),
        cluster_authorized_operations=ALL_OPERATIONS,
    )


def page(
    topics: Sequence[tuple[str, int | None]], cursor: Cursor | None, limit: int
) -> tuple[list[tuple[str, range | None]], Cursor | None]:
    """Which partitions one DescribeTopicPartitions answer holds, as a broker pages them:
    ``topics`` sorted by name with their partition counts (None: unknown topic, answered
    with an error and not counted), starting at ``cursor``, at most ``limit``
    partitions; and the cursor of the next page (None: this was the last). Pure."""
    chosen: list[tuple[str, range | None]] = []
    left = max(limit, 1)
    ordered = [t for t in topics if cursor is None or t[0] >= cursor[0]]
    for n, (name, count) in enumerate(ordered):
        if count is None:
            chosen.append((name, None))
            continue
        first = cursor[1] if cursor is not None and name == cursor[0] else 0
        if left == 0:
            return chosen, (name, first)
        end = min(count, first + left)
        chosen.append((name, range(first, end)))
        left -= end - first
        if end < count:
            return chosen, (name, end)
        if left == 0 and n + 1 < len(ordered):
            return chosen, (ordered[n + 1][0], 0)
    return chosen, None


async def describe_topic_partitions(state: State, body: Any) -> Any:
    """Routed topics' partitions, paged by the request's cursor and limit."""
    reply = response_class_of(body)
    names = sorted({t.name for t in body.topics} if body.topics else set(state.routes.topics))
    cursor = (body.cursor.topic_name, int(body.cursor.partition_index)) if body.cursor else None
    counts = [(name, await state.partition_count(name)) for name in names]
    limit = min(int(body.response_partition_limit), MAX_PARTITIONS)
    chosen, following = page(counts, cursor, limit)
    topic_type = item_type(reply, "topics")
    next_type = item_type(reply, "next_cursor")
    return build(
        reply,
        throttle_time=NO_THROTTLE,
        topics=tuple(_topic(state, topic_type, name, which) for name, which in chosen),
        next_cursor=(
            None
            if following is None
            else next_type(topic_name=following[0], partition_index=following[1])
        ),
    )


def _topic(state: State, topic_type: type, name: str, which: range | None) -> Any:
    partition_type = item_type(topic_type, "partitions")
    partitions = tuple(
        build(
            partition_type,
            **partition_values(state, name, p),
            eligible_leader_replicas=(),
            last_known_elr=(),
        )
        for p in which or ()
    )
    return build(
        topic_type,
        error_code=ErrorCode.unknown_topic_or_partition if which is None else ErrorCode.none,
        name=name,
        topic_id=topic_id(name),
        is_internal=False,
        partitions=partitions,
        topic_authorized_operations=ALL_OPERATIONS,
    )


def list_partition_reassignments(body: Any) -> Any:
    """No reassignment is ever in progress: each partition's one replica is a gateway
    instance."""
    return build(
        response_class_of(body),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        topics=(),
    )
