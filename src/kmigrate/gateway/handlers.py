"""What the gateway answers to each request a client sends.

* ApiVersions: the versions the gateway, kio and every backend all support.
* Metadata: synthesized: routed topics only, each partition "led" by a live gateway
  instance, leader epochs from the backend that holds the partition.
* Produce, Fetch, ListOffsets, OffsetForLeaderEpoch: split by partition to the backend
  broker leading it (kmigrate.gateway.split), answers merged in the client's order. A
  partition that migrated is served in virtual offsets (kmigrate.gateway.virtual); its
  writes wait while a migration fences them (kmigrate.gateway.fences); a shielded
  cluster's partitions get retriable errors without a request sent there.
* FindCoordinator: this instance; group requests go to the group's coordinator in the
  "group home" cluster.
* Transactions (and the KIP-848 consumer protocol, which the gateway does not list) are
  refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records

from kmigrate.errors import ClusterUnreachableError
from kmigrate.gateway import batches, split, virtual
from kmigrate.gateway.backend import Backend, BackendUnavailable
from kmigrate.gateway.entities import (
    NO_THROTTLE,
    build,
    field_names,
    item_type,
    response_class_of,
)
from kmigrate.gateway.fences import Fences
from kmigrate.gateway.marks import Marks
from kmigrate.gateway.migrations import writers_key
from kmigrate.gateway.placement import Instance, leader_of, topic_id
from kmigrate.gateway.producers import ProducerIds
from kmigrate.gateway.routes import RoutingTable, TopicRoute
from kmigrate.gateway.sequences import SequenceGuard, Write
from kmigrate.gateway.stats import Timings
from kmigrate.gateway.wire import Request, known_versions, response_type

log = logging.getLogger(__name__)

NO_TRANSACTIONS = "transactions are not supported through the kmigrate gateway"

# The versions the gateway itself handles: topics by name (no topic ids in Produce,
# Fetch, OffsetCommit, OffsetFetch), no KIP-951 leader hints pointing at backends, one
# group per OffsetFetch.
OWN_VERSIONS: Mapping[int, tuple[int, int]] = {
    0: (3, 9),  # Produce
    1: (4, 12),  # Fetch
    2: (1, 7),  # ListOffsets
    3: (4, 12),  # Metadata
    8: (2, 8),  # OffsetCommit
    9: (1, 7),  # OffsetFetch
    10: (0, 4),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 4),  # ListGroups
    18: (0, 3),  # ApiVersions
    22: (0, 4),  # InitProducerId (transactional: refused)
    23: (2, 4),  # OffsetForLeaderEpoch
}
GROUP_APIS = {8, 9, 11, 12, 13, 14}
FETCH_MARGIN_S = 2.0


def advertised_versions(backends: list[Backend]) -> dict[int, tuple[int, int]]:
    """Per API, the range the gateway, kio and every backend support."""
    versions = {}
    for api, (low, high) in OWN_VERSIONS.items():
        ranges = [(low, high), known_versions(api) or (1, 0)]
        if api != 18:
            ranges += [b.versions.get(api, (1, 0)) for b in backends]
        lowest, highest = max(r[0] for r in ranges), min(r[1] for r in ranges)
        if lowest <= highest:
            versions[api] = (lowest, highest)
    return versions


class Gateway:
    """One gateway instance's view of the world and its answers."""

    def __init__(
        self,
        name: str,
        me: Instance,
        backends: Mapping[str, Backend],
        group_home: str,
        producer_ids: ProducerIds | None = None,
        fences: Fences | None = None,
    ) -> None:
        self.name = name
        self.me = me
        self.backends = dict(backends)
        self.group_home = self.backends[group_home]
        self.routes = RoutingTable()
        self.instances: list[Instance] = [me]
        self.versions: dict[int, tuple[int, int]] = {}
        self.producer_ids = producer_ids
        self.fences = fences or Fences(_no_acknowledgement)
        self.marks = Marks()
        self.timings = Timings()
        self._down: set[str] = set()  # backends that failed, until one answers again

    async def start(self) -> None:
        """Learn every backend; the group home must answer, another backend that does
        not is served with retriable errors until it does."""
        backends = list(self.backends.values())
        results = await asyncio.gather(*(b.start() for b in backends), return_exceptions=True)
        for backend, result in zip(backends, results, strict=True):
            if not isinstance(result, BaseException):
                continue
            if not isinstance(result, BackendUnavailable):
                raise result
            if backend is self.group_home:
                raise ClusterUnreachableError(
                    f"the group home cluster '{backend.name}' does not answer ({result}); "
                    "the gateway needs it to start",
                    cluster=backend.name,
                    condition="unreachable",
                )
            self._down.add(backend.name)
            log.warning(
                "backend %s does not answer yet (%s); serving the others", backend.name, result
            )
        self.versions = advertised_versions([b for b in backends if b.versions])

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()

    def live_instances(self) -> list[Instance]:
        return self.instances or [self.me]

    # ------------------------------------------------------------ dispatch

    def supports(self, api_key: int, version: int) -> bool:
        low, high = self.versions.get(api_key, (1, 0))
        return low <= version <= high

    async def handle(self, request: Request, guard: SequenceGuard | None = None) -> Any:
        """The answer to ``request`` (None: the client expects none, acks=0); ``guard``
        follows the idempotent writes of the client connection it came on."""
        body = request.body
        match request.api_key:
            case 18:
                return self.api_versions(request)
            case 3:
                return await self.metadata(body)
            case 0:
                return await self.produce(body, guard or SequenceGuard())
            case 1:
                return await self.fetch(body)
            case 2:
                return await self.list_offsets(body)
            case 23:
                return await self.partitioned(split.LEADER_EPOCH, body, self._place_epoch(body))
            case 10:
                return self.find_coordinator(body)
            case 15:
                return await self.describe_groups(body)
            case 16:
                return await self.list_groups(body)
            case 22:
                return await self.init_producer_id(body)
            case api if api in GROUP_APIS:
                return await self.to_coordinator(body.group_id, body)
        raise AssertionError(f"no handler for api {request.api_key}")

    # ------------------------------------------------------------ versions, metadata

    def api_versions(self, request: Request) -> Any:
        version = request.version if self.supports(18, request.version) else 0
        reply = response_type(18, version)
        keys = tuple(
            build(item_type(reply, "api_keys"), api_key=k, min_version=low, max_version=high)
            for k, (low, high) in sorted(self.versions.items())
        )
        code = ErrorCode.none if version == request.version else ErrorCode.unsupported_version
        return build(reply, error_code=code, api_keys=keys, throttle_time=NO_THROTTLE)

    async def metadata(self, body: Any) -> Any:
        wanted = (
            list(self.routes.topics)
            if body.topics is None
            else [t.name for t in body.topics if t.name is not None]
        )
        if any(self._partition_count(t) is None for t in wanted if t in self.routes.topics):
            await self._refresh_all()
        reply = response_class_of(body)
        broker_type = item_type(reply, "brokers")
        topic_type = item_type(reply, "topics")
        partition_type = item_type(topic_type, "partitions")
        instances = self.live_instances()
        topics = []
        for name in wanted:
            count = self._partition_count(name) if name in self.routes.topics else None
            if count is None:
                code = (
                    ErrorCode.unknown_topic_or_partition
                    if name not in self.routes.topics
                    else ErrorCode.leader_not_available
                )
                topics.append(
                    build(
                        topic_type,
                        error_code=code,
                        name=name,
                        topic_id=topic_id(name),
                        is_internal=False,
                        partitions=(),
                        topic_authorized_operations=-2147483648,
                    )
                )
                continue
            partitions = []
            route = self.routes.topics[name]
            for p in range(count):
                leader = leader_of(name, p, instances).node_id
                known = self._leader(name, p)
                code, epoch = (
                    (ErrorCode.leader_not_available, -1)
                    if known is None or known.broker < 0
                    else (ErrorCode.none, -1 if p in route.migrations else known.epoch)
                )
                partitions.append(
                    build(
                        partition_type,
                        error_code=code,
                        partition_index=p,
                        leader_id=leader,
                        leader_epoch=epoch,
                        replica_nodes=(leader,),
                        isr_nodes=(leader,),
                        offline_replicas=(),
                    )
                )
            topics.append(
                build(
                    topic_type,
                    error_code=ErrorCode.none,
                    name=name,
                    topic_id=topic_id(name),
                    is_internal=False,
                    partitions=tuple(partitions),
                    topic_authorized_operations=-2147483648,
                )
            )
        brokers = tuple(
            build(broker_type, node_id=i.node_id, host=i.host, port=i.port, rack=None)
            for i in instances
        )
        return build(
            reply,
            throttle_time=NO_THROTTLE,
            brokers=brokers,
            cluster_id=f"kmigrate-gateway-{self.name}",
            controller_id=min(i.node_id for i in instances),
            topics=tuple(topics),
            cluster_authorized_operations=-2147483648,
        )

    async def partition_count(self, topic: str) -> int | None:
        """How many partitions a routed topic has (None: not routed, or its cluster does
        not know it), learning the backends' metadata again when it is not known yet."""
        if topic not in self.routes.topics:
            return None
        if self._partition_count(topic) is None:
            await self._refresh_all()
        return self._partition_count(topic)

    def _backend_of(self, topic: str, partition: int) -> Backend | None:
        cluster = self.routes.cluster_of(topic, partition)
        return self.backends.get(cluster) if cluster else None

    def _partition_count(self, topic: str) -> int | None:
        route = self.routes.topics[topic]
        backend = self.backends.get(route.cluster)
        return backend.view.partitions.get(topic) if backend else None

    def _leader(self, topic: str, partition: int) -> Any:
        backend = self._backend_of(topic, partition)
        return backend.leader(topic, partition) if backend else None

    async def _refresh_all(self) -> None:
        results = await asyncio.gather(
            *(b.refresh() for b in self.backends.values()), return_exceptions=True
        )
        for backend, result in zip(self.backends.values(), results, strict=True):
            if isinstance(result, Exception):
                log.warning("backend %s: metadata refresh failed: %s", backend.name, result)

    # ------------------------------------------------------------ partitioned requests

    def _target(self, cluster: str, topic: str, partition: int) -> split.Target | ErrorCode:
        """The broker of ``cluster`` that leads ``topic[partition]``."""
        if cluster in self.routes.shielded:
            return ErrorCode.not_leader_or_follower
        backend = self.backends.get(cluster)
        leader = backend.leader(topic, partition) if backend else None
        if leader is None or leader.broker < 0:
            self._soon_refresh(cluster)
            return ErrorCode.not_leader_or_follower
        return cluster, leader.broker

    def _route(self, topic: str, item: Any, index: str) -> tuple[TopicRoute, int] | ErrorCode:
        route = self.routes.topics.get(topic)
        if route is None:
            return ErrorCode.unknown_topic_or_partition
        return route, int(getattr(item, index))

    def _routed(self, part: virtual.Part | ErrorCode, topic: str, p: int) -> Any:
        if isinstance(part, ErrorCode):
            return part
        target = self._target(part.cluster, topic, p)
        return (
            target if isinstance(target, ErrorCode) else split.Routed(target, part.item, part.fix)
        )

    def _place_with(self, shape: split.Shape) -> split.Place:
        def place(topic: str, item: Any) -> Any:
            found = self._route(topic, item, shape.index)
            if isinstance(found, ErrorCode):
                return found
            route, p = found
            return self._target(route.cluster_of(p), topic, p)

        return place

    def _place_fetch(self, topic: str, item: Any) -> Any:
        found = self._route(topic, item, "partition")
        if isinstance(found, ErrorCode):
            return found
        route, p = found
        space = route.space(p)
        if space is None:
            return self._target(route.cluster_of(p), topic, p)
        return self._routed(virtual.fetch(space, item), topic, p)

    def _place_epoch(self, body: Any) -> split.Place:
        reply_type = split.reply_partition_type(split.LEADER_EPOCH, body)

        def place(topic: str, item: Any) -> Any:
            found = self._route(topic, item, "partition")
            if isinstance(found, ErrorCode):
                return found
            route, p = found
            if p not in route.migrations:
                return self._target(route.cluster_of(p), topic, p)
            return split.Local(virtual.leader_epoch_answer(reply_type, item))

        return place

    def _place_write(self, body: Any) -> split.Place:
        reply_type = split.reply_partition_type(split.PRODUCE, body)

        def place(topic: str, item: Any) -> Any:
            found = self._route(topic, item, "index")
            if isinstance(found, ErrorCode):
                return found
            route, p = found
            if self.fences.fenced((topic, p)):
                return ErrorCode.not_leader_or_follower  # parked too long: not written, retry
            target = self._target(route.cluster_of(p), topic, p)
            space = route.space(p)
            if space is None or isinstance(target, ErrorCode):
                return target
            if _written_on_origin(route, p, item):
                log.info("%s[%d]: a retried write the origin holds; answered as written", topic, p)
                return split.Local(split.PRODUCE.error(reply_type, p, ErrorCode.none))
            return split.Routed(target, item, virtual.produce_fix(space))

        return place

    async def _send(self, target: split.Target, body: Any, expect_response: bool = True) -> Any:
        cluster, broker = target
        answer = await self.backends[cluster].call_broker(
            broker, body, expect_response=expect_response
        )
        if cluster in self._down:
            self._down.discard(cluster)
            log.warning("backend %s answers again", cluster)
        return answer

    def _answered(self, target: split.Target, codes: set[ErrorCode]) -> None:
        """A backend broker answered errors for some partitions: if it no longer leads
        them, learn the cluster's leaders again."""
        if codes & _STALE_LEADER:
            self._soon_refresh(target[0])

    def _failed(self, target: split.Target, exc: Exception) -> ErrorCode:
        if isinstance(exc, batches.BatchError):
            log.warning("refusing a produce request: %s", exc)
            return ErrorCode.corrupt_message
        cluster, broker = target
        if cluster not in self._down:
            self._down.add(cluster)
            log.warning(
                "backend %s (broker %s) unavailable: %s; its partitions answer retriable "
                "errors until it is back",
                cluster,
                broker,
                exc,
            )
        self._soon_refresh(cluster)
        return ErrorCode.not_leader_or_follower

    def _soon_refresh(self, cluster: str) -> None:
        backend = self.backends.get(cluster)
        if backend is not None:
            task = asyncio.get_running_loop().create_task(backend.refresh())
            task.add_done_callback(_quiet)

    async def partitioned(
        self, shape: split.Shape, body: Any, place: split.Place | None = None
    ) -> Any:
        return await split.split_call(
            shape,
            body,
            place or self._place_with(shape),
            self._send,
            on_failure=self._failed,
            on_errors=self._answered,
        )

    async def list_offsets(self, body: Any) -> Any:
        """ListOffsets; a by-timestamp lookup of a migrated partition that finds nothing
        in one segment asks the next (virtual offsets grow with time across them)."""

        def place(attempt: int) -> split.Place:
            def at(topic: str, item: Any) -> Any:
                found = self._route(topic, item, "partition_index")
                if isinstance(found, ErrorCode):
                    return found
                route, p = found
                space = route.space(p)
                if space is None:
                    return self._target(route.cluster_of(p), topic, p)
                return self._routed(virtual.list_offsets(space, item, attempt), topic, p)

            return at

        answer = await self.partitioned(split.LIST_OFFSETS, body, place(0))
        for attempt in range(1, 4):
            again = _again(self.routes, body, answer, attempt)
            if again is None:
                break
            more = await self.partitioned(split.LIST_OFFSETS, again, place(attempt))
            answer = _replaced(answer, more)
        return answer

    async def produce(self, body: Any, guard: SequenceGuard) -> Any:
        if body.transactional_id:
            return await split.split_call(
                split.PRODUCE,
                body,
                lambda _t, _p: ErrorCode.transactional_id_authorization_failed,
                self._send,
            )
        acks = int(body.acks)

        async def send(target: split.Target, part: Any) -> Any:
            part = await self._for_cluster(target[0], with_acks_all(part))
            answer = await self._send(target, part)
            for topic in answer.responses:
                for reply in topic.partition_responses:
                    if reply.error_code == ErrorCode.none and reply.base_offset >= 0:
                        self.marks.saw(target[0], topic.name, reply.index, reply.base_offset + 1)
            return answer

        keys = [(t.name, int(p.index)) for t in body.topic_data for p in t.partition_data]
        if acks == 0:
            self._fire_and_forget(body, keys, send)
            return None
        await self.fences.admit(keys)
        with self.fences.writing(keys):
            writes = _writes(body)
            for write in writes:
                guard.sent(write)
            try:
                answer = await split.split_call(
                    split.PRODUCE,
                    body,
                    self._place_write(body),
                    send,
                    on_failure=self._produce_failed,
                    on_errors=self._answered,
                )
            except BaseException:
                for write in writes:
                    guard.answered(write, ErrorCode.unknown_server_error)
                raise
            return _guarded(answer, writes, guard)

    def _fire_and_forget(self, body: Any, keys: list[tuple[str, int]], send: split.Send) -> None:
        """An acks=0 client gets no answer; its writes still go to the backends with
        acks=all, in the background, counted as in flight from now on (a fence that
        arrives meanwhile waits for them)."""
        stack = contextlib.ExitStack()
        fenced = any(self.fences.fenced(k) for k in keys)
        if not fenced:
            stack.enter_context(self.fences.writing(keys))

        async def forward() -> None:
            with stack:
                if fenced:
                    await self.fences.admit(keys)
                    stack.enter_context(self.fences.writing(keys))
                await split.split_call(
                    split.PRODUCE, body, self._place_write(body), send, on_failure=self._failed
                )

        asyncio.get_running_loop().create_task(forward()).add_done_callback(_quiet)

    def _produce_failed(self, target: split.Target, exc: Exception) -> ErrorCode:
        """A write that reached the backend and got no answer may be in its log: the
        client must retry it as possibly written (same sequence numbers, so the broker
        can recognise it), never as surely refused."""
        code = self._failed(target, exc)
        if isinstance(exc, BackendUnavailable) and exc.sent:
            return ErrorCode.request_timed_out
        return code

    async def _for_cluster(self, cluster: str, body: Any) -> Any:
        """An idempotent producer's batches with the producer id ``cluster`` knows."""
        if cluster == self.group_home.name or self.producer_ids is None:
            return body
        client = next(
            (
                found
                for topic in body.topic_data
                for p in topic.partition_data
                if p.records and (found := batches.producer_of(p.records))
            ),
            None,
        )
        if client is None:
            return body
        pid, epoch = await self.producer_ids.on(client, cluster)
        return dataclasses.replace(
            body,
            topic_data=tuple(
                dataclasses.replace(
                    topic,
                    partition_data=tuple(
                        dataclasses.replace(
                            p, records=Records(batches.with_producer(p.records, pid, epoch))
                        )
                        if p.records
                        else p
                        for p in topic.partition_data
                    ),
                )
                for topic in body.topic_data
            ),
        )

    async def fetch(self, body: Any) -> Any:
        def no_session(part: Any) -> Any:
            return dataclasses.replace(
                part, session_id=0, session_epoch=-1, forgotten_topics_data=()
            )

        # A backend that hangs must not hold up the other backends' partitions: each part
        # gets the client's wait plus a margin, then its partitions a retriable error.
        deadline = body.max_wait.total_seconds() + FETCH_MARGIN_S

        async def send(target: split.Target, part: Any) -> Any:
            try:
                answer = await asyncio.wait_for(self._send(target, part), deadline)
            except TimeoutError:
                raise BackendUnavailable(f"no fetch answer within {deadline:g}s") from None
            for topic in answer.responses:
                for reply in topic.partitions:
                    if reply.error_code == ErrorCode.none:
                        self.marks.saw(
                            target[0], topic.topic, reply.partition_index, reply.high_watermark
                        )
            return answer

        answer = await split.split_call(
            split.FETCH,
            body,
            self._place_fetch,
            send,
            adjust=no_session,
            on_failure=self._failed,
            on_errors=self._answered,
        )
        # Backend broker ids mean nothing to clients: no read replicas, no leader hints.
        topics = tuple(
            dataclasses.replace(
                topic,
                partitions=tuple(_without_hints(p) for p in topic.partitions),
            )
            for topic in answer.responses
        )
        return dataclasses.replace(
            answer, responses=topics, session_id=0, error_code=ErrorCode.none
        )

    # ------------------------------------------------------------ groups

    def find_coordinator(self, body: Any) -> Any:
        reply = response_class_of(body)
        me = self.me
        refused = int(body.key_type) != 0
        code = ErrorCode.transactional_id_authorization_failed if refused else ErrorCode.none
        message = NO_TRANSACTIONS if refused else None
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

    async def to_coordinator(self, group: str, body: Any) -> Any:
        """``body`` answered by ``group``'s coordinator in the group home cluster."""
        home = self.group_home
        for attempt in range(2):
            try:
                broker = await home.coordinator(group)
                answer = await home.call_broker(broker, body)
            except BackendUnavailable as exc:
                home.forget_coordinator(group)
                if attempt:
                    raise
                log.info("group %s: coordinator unavailable (%s); looking it up again", group, exc)
                await _quietly(home.refresh())
                continue
            if _mentions(answer, _MOVED_COORDINATOR):
                home.forget_coordinator(group)
            return answer
        raise AssertionError("unreachable")

    async def describe_groups(self, body: Any) -> Any:
        answers = await asyncio.gather(
            *(self.to_coordinator(g, dataclasses.replace(body, groups=(g,))) for g in body.groups)
        )
        merged = tuple(group for answer in answers for group in answer.groups)
        return (
            dataclasses.replace(answers[0], groups=merged)
            if answers
            else build(response_class_of(body), throttle_time=NO_THROTTLE, groups=())
        )

    async def list_groups(self, body: Any) -> Any:
        home = self.group_home
        brokers = list(home.view.brokers)
        answers = await asyncio.gather(*(home.call_broker(b, body) for b in brokers))
        groups = tuple(g for a in answers for g in a.groups)
        return build(
            response_class_of(body),
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            groups=groups,
        )

    async def init_producer_id(self, body: Any) -> Any:
        """Idempotent producers get their id from the group home; transactions are
        refused."""
        if not body.transactional_id:
            return await self.group_home.call_any(body)
        return build(
            response_class_of(body),
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.transactional_id_authorization_failed,
            producer_id=-1,
            producer_epoch=-1,
        )


_STALE_LEADER = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.leader_not_available,
    ErrorCode.unknown_topic_or_partition,
}
_MOVED_COORDINATOR = {ErrorCode.not_coordinator, ErrorCode.coordinator_not_available}


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


def _without_hints(partition: Any) -> Any:
    """``partition`` without a read replica or leader hint naming a backend broker."""
    names = field_names(partition.__class__)
    changes: dict[str, Any] = {}
    if "preferred_read_replica" in names and partition.preferred_read_replica != -1:
        changes["preferred_read_replica"] = -1
    if "current_leader" in names and partition.current_leader.leader_id != -1:
        changes["current_leader"] = type(partition.current_leader)()
    return dataclasses.replace(partition, **changes) if changes else partition


def with_acks_all(request: Any) -> Any:
    """A Produce request as backends get it: acks=all whatever the client asked (seed
    000's question 2: a write a leader alone acknowledged is lost when leadership moves,
    migration or not)."""
    return request if int(request.acks) == -1 else dataclasses.replace(request, acks=-1)


async def _no_acknowledgement(_topic: str, _partition: int, _epoch: int) -> None:
    """An instance without ZooKeeper (tests of the handlers alone)."""


def _written_on_origin(route: TopicRoute, partition: int, item: Any) -> bool:
    """Whether ``item`` is a retried write the origin already holds (its answer was lost
    as the partition moved): sent to the target it would be written twice."""
    chain = route.migrations.get(partition)
    writers = chain[-1].writers if chain else None
    if not writers or not item.records:
        return False
    sequence = batches.sequence_of(item.records)
    last = batches.last_sequence_of(item.records)
    if sequence is None or last is None:
        return False
    held = writers.get(writers_key(sequence[0], sequence[1]))
    return held is not None and last <= held


def _again(routes: RoutingTable, body: Any, answer: Any, attempt: int) -> Any:
    """The by-timestamp lookups of ``body`` to ask the next segment, or None."""
    replies = {(t.name, int(r.partition_index)): r for t in answer.topics for r in t.partitions}
    topics = []
    for topic in body.topics:
        route = routes.topics.get(topic.name)
        chosen = []
        for item in topic.partitions:
            p = int(item.partition_index)
            space = route.space(p) if route else None
            reply = replies.get((topic.name, p))
            if space and reply is not None and virtual.needs_next(space, item, reply, attempt - 1):
                chosen.append(item)
        if chosen:
            topics.append(dataclasses.replace(topic, partitions=tuple(chosen)))
    return dataclasses.replace(body, topics=tuple(topics)) if topics else None


def _replaced(answer: Any, more: Any) -> Any:
    """``answer`` with the partitions ``more`` answers taken from ``more``."""
    better = {(t.name, int(r.partition_index)): r for t in more.topics for r in t.partitions}
    return dataclasses.replace(
        answer,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    better.get((t.name, int(r.partition_index)), r) for r in t.partitions
                ),
            )
            for t in answer.topics
        ),
    )


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("background refresh failed: %s", task.exception())


async def _quietly(step: Any) -> None:
    try:
        await step
    except BackendUnavailable as exc:
        log.info("refresh failed: %s", exc)


def _writes(body: Any) -> list[Write]:
    """The idempotent writes of a Produce request, one per partition."""
    found = []
    for topic in body.topic_data:
        for p in topic.partition_data:
            if p.records and (sequence := batches.sequence_of(p.records)):
                pid, epoch, first = sequence
                found.append(Write(topic.name, int(p.index), (pid, epoch), first))
    return found


def _guarded(answer: Any, writes: list[Write], guard: SequenceGuard) -> Any:
    """``answer`` with each write's error code as the guard says the client must see it
    (rebuilt only in the rare case that one changes)."""
    if not writes:
        return answer
    by_key = {(w.topic, w.partition): w for w in writes}
    changed: dict[tuple[str, int], ErrorCode] = {}
    for topic in answer.responses:
        for reply in topic.partition_responses:
            key = (topic.name, int(reply.index))
            if key in by_key:
                code = guard.answered(by_key[key], reply.error_code)
                if code != reply.error_code:
                    changed[key] = code
    if not changed:
        return answer

    def partition(topic: str, reply: Any) -> Any:
        code = changed.get((topic, int(reply.index)))
        return (
            reply if code is None else dataclasses.replace(reply, error_code=code, base_offset=-1)
        )

    return dataclasses.replace(
        answer,
        responses=tuple(
            dataclasses.replace(
                topic,
                partition_responses=tuple(
                    partition(topic.name, p) for p in topic.partition_responses
                ),
            )
            for topic in answer.responses
        ),
    )
