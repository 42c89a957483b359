"""ApiVersions and Metadata, as the gateway answers them.

* ApiVersions: the versions the gateway, kio and every backend all support.
* Metadata: synthesized: routed topics only, each partition "led" by a live gateway
  instance, leader epochs from the backend that holds the partition (raised by
  MOVED_EPOCHS per move for a partition that moved: epochs of two clusters do not
  compare, and a client must never see its epoch go back).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.placement import leader_of, topic_id
from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving.state import State
from kmigrate.kafka.protocol.wire import Request, response_type

_ALL_OPERATIONS = -2147483648  # "not asked for" in authorized-operations fields
# A partition that moved has the leader epochs of its cluster now, raised past every
# epoch it had before (2**20 per move): a client never sees its epoch go back (Go's
# franz-go keeps a leader whose epoch would go back, or that has none, even after the
# instance it names died). Requests for a moved partition reach its backends without
# the client's epoch (kmigrate.gateway.serving.virtual).
MOVED_EPOCHS = 2**20


def api_versions(state: State, request: Request) -> Any:
    """The versions the gateway offers, in the client's version when it knows it (else
    v0 with UNSUPPORTED_VERSION: KIP-511)."""
    version = request.version if state.supports(18, request.version) else 0
    reply = response_type(18, version)
    keys = tuple(
        build(item_type(reply, "api_keys"), api_key=k, min_version=low, max_version=high)
        for k, (low, high) in sorted(state.versions.items())
    )
    code = ErrorCode.none if version == request.version else ErrorCode.unsupported_version
    return build(reply, error_code=code, api_keys=keys, throttle_time=NO_THROTTLE)


async def metadata(state: State, body: Any) -> Any:
    """The routed topics the client asked for, led by the live gateway instances."""
    routes = state.routes
    wanted = (
        list(routes.topics)
        if body.topics is None
        else [t.name for t in body.topics if t.name is not None]
    )
    # A routed topic the gateway knows no partitions of, or a partition without a
    # leader (just created, a leader being elected): learn again before answering, as
    # some clients do not ask twice (librdkafka's DeleteRecords fails at once).
    if any(state.known_partition_count(t) is None for t in wanted if t in routes.topics):
        await state.refresh_all()
    elif stale := state.leaderless(wanted):
        await state.refresh(stale)
    reply = response_class_of(body)
    instances = state.live_instances()
    topic_type = item_type(reply, "topics")
    topics = tuple(_topic(state, topic_type, name) for name in wanted)
    brokers = tuple(
        build(item_type(reply, "brokers"), node_id=i.node_id, host=i.host, port=i.port, rack=None)
        for i in instances
    )
    return build(
        reply,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=cluster_id(state),
        controller_id=min(i.node_id for i in instances),
        topics=topics,
        cluster_authorized_operations=_ALL_OPERATIONS,
    )


def cluster_id(state: State) -> str:
    """The cluster id clients are told: the gateway's, never a backend's."""
    return f"kmigrate-gateway-{state.name}"


def _topic(state: State, topic_type: type, name: str) -> Any:
    """One topic's metadata: its partitions, or why it has none."""
    routed = name in state.routes.topics
    count = state.known_partition_count(name) if routed else None
    if count is None:
        code = ErrorCode.leader_not_available if routed else ErrorCode.unknown_topic_or_partition
        partitions: tuple[Any, ...] = ()
    else:
        code = ErrorCode.none
        partition_type = item_type(topic_type, "partitions")
        partitions = tuple(_partition(state, partition_type, name, p) for p in range(count))
    return build(
        topic_type,
        error_code=code,
        name=name,
        topic_id=topic_id(name),
        is_internal=False,
        partitions=partitions,
        topic_authorized_operations=_ALL_OPERATIONS,
    )


def _partition(state: State, partition_type: type, topic: str, p: int) -> Any:
    return build(partition_type, **partition_values(state, topic, p))


def partition_values(state: State, topic: str, p: int) -> dict[str, Any]:
    """One partition as clients see it: led by a live instance, its only replica."""
    leader = leader_of(topic, p, state.live_instances()).node_id
    known = state.leader(topic, p)
    flips = sum(1 for m in state.routes.topics[topic].migrations.get(p, ()) if m.flipped)
    code, epoch = (
        (ErrorCode.leader_not_available, -1)
        if known is None or known.broker < 0
        else (ErrorCode.none, flips * MOVED_EPOCHS + known.epoch)
    )
    return {
        "error_code": code,
        "partition_index": p,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": (leader,),
        "isr_nodes": (leader,),
        "offline_replicas": (),
    }
