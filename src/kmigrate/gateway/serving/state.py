"""The small state object every API family of a gateway instance works on: the backends,
the routing table, the live instances, the fences, marks and timings, and the few steps
all families share (which backend broker leads a partition, sending to it, what a
failure or an error answer means for the backend's health).

Everything runs on the instance's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.codec import batches
from kmigrate.errors import AuthenticationError, ClusterUnreachableError
from kmigrate.gateway.control.fences import Fences
from kmigrate.gateway.control.marks import Marks, MarkStore
from kmigrate.gateway.control.partition_moves import Segment
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.principals import PrincipalMap
from kmigrate.gateway.control.producers import ProducerIds
from kmigrate.gateway.control.routes import RoutingTable, TopicRoute
from kmigrate.gateway.protocol.backend import Backend, BackendUnavailable, Leader
from kmigrate.gateway.serving import split, virtual
from kmigrate.gateway.serving.first_writes import FirstWrites
from kmigrate.gateway.serving.stats import Timings
from kmigrate.kafka.protocol.wire import known_versions

log = logging.getLogger("kmigrate.gateway.handlers")  # as before the move (logs)

# The versions the gateway itself handles: topics by name (no topic ids in Produce,
# Fetch, OffsetCommit, OffsetFetch), no KIP-951 leader hints pointing at backends, one
# group per OffsetFetch.
OWN_VERSIONS: Mapping[int, tuple[int, int]] = {
    0: (3, 9),  # Produce
    1: (4, 12),  # Fetch
    2: (1, 10),  # ListOffsets (v8: earliest-local, v9: latest-tiered, v10: timeout)
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
    19: (2, 7),  # CreateTopics (on the default route's cluster)
    20: (1, 6),  # DeleteTopics
    21: (0, 2),  # DeleteRecords
    22: (0, 5),  # InitProducerId (v6: two-phase commit, not offered)
    23: (2, 4),  # OffsetForLeaderEpoch
    # Transactions as clients of transaction version 1 speak them (KIP-890's version 2
    # adds partitions with Produce v12 and is not offered: AddPartitionsToTxn is where
    # the gateway keeps a transaction on one backend).
    24: (0, 3),  # AddPartitionsToTxn (v4 and later: broker to broker)
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 4),  # EndTxn
    28: (0, 4),  # TxnOffsetCommit
    29: (1, 3),  # DescribeAcls (refused: SECURITY_DISABLED, and why)
    30: (1, 3),  # CreateAcls (refused likewise)
    31: (1, 3),  # DeleteAcls (refused likewise)
    32: (1, 4),  # DescribeConfigs
    33: (0, 2),  # AlterConfigs
    37: (0, 3),  # CreatePartitions
    42: (0, 2),  # DeleteGroups
    44: (0, 1),  # IncrementalAlterConfigs
    46: (0, 0),  # ListPartitionReassignments (none: one replica per partition)
    47: (0, 0),  # OffsetDelete
    60: (0, 2),  # DescribeCluster (the live instances)
    61: (0, 0),  # DescribeProducers
    75: (0, 0),  # DescribeTopicPartitions (KIP-966)
}
_STALE_LEADER = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.leader_not_available,
    ErrorCode.unknown_topic_or_partition,
}


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


class State:
    """One gateway instance's view of the world."""

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
        self.mark_store = MarkStore(self.marks)  # its store set when ZooKeeper is known
        self.first_writes = FirstWrites()
        self.timings = Timings()
        self.principals = PrincipalMap()  # who acts on backends for a client
        self._down: set[str] = set()  # backends that failed, until one answers again
        self._asked_again: dict[str, float] = {}  # backend -> when leaderless() last asked
        # Writes the routing table (read, change, compare-and-set) in ZooKeeper; blocking
        # (run it in a thread). None: an instance without ZooKeeper.
        self.edit_routes: (
            Callable[[Callable[[RoutingTable], RoutingTable]], RoutingTable] | None
        ) = None
        self.read_routes: Callable[[], RoutingTable] | None = None  # blocking, synced read

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

    def follow(self, table: RoutingTable) -> None:
        """Serve ``table`` from now on, its fences too (an older one than served is
        ignored); when it changed, learn every backend's metadata again (partition counts:
        a topic created, deleted or given partitions through another instance)."""
        if table.version < self.routes.version:
            return
        changed = table.version != self.routes.version
        self.routes = table
        self.fences.follow(table)
        if changed:
            for cluster in self.backends:
                self.soon_refresh(cluster)

    async def routes_naming(self, topics: Iterable[str]) -> RoutingTable:
        """The routing table, read again from ZooKeeper first when it does not name
        every one of ``topics``: an admin request may name a topic another instance
        created a moment ago, before this instance's watch told it."""
        if self.read_routes is None or all(t in self.routes.topics for t in topics):
            return self.routes
        try:
            self.follow(await asyncio.to_thread(self.read_routes))
        except Exception as exc:  # ZooKeeper away: the table this instance has
            log.info("could not read the routing table again: %s", exc)
        return self.routes

    def live_instances(self) -> list[Instance]:
        return self.instances or [self.me]

    def supports(self, api_key: int, version: int) -> bool:
        low, high = self.versions.get(api_key, (1, 0))
        return low <= version <= high

    # ------------------------------------------------------------ what backends know

    async def partition_count(self, topic: str) -> int | None:
        """How many partitions a routed topic has (None: not routed, or its cluster does
        not know it), learning the backends' metadata again when it is not known yet."""
        if topic not in self.routes.topics:
            return None
        if self.known_partition_count(topic) is None:
            await self.refresh_all()
        return self.known_partition_count(topic)

    def known_partition_count(self, topic: str) -> int | None:
        """A routed topic's partition count as its cluster last told it."""
        route = self.routes.topics[topic]
        backend = self.backends.get(route.cluster)
        return backend.view.partitions.get(topic) if backend else None

    def leader(self, topic: str, partition: int) -> Leader | None:
        """The partition's leader in the cluster it is routed to, as last learned."""
        cluster = self.routes.cluster_of(topic, partition)
        backend = self.backends.get(cluster) if cluster else None
        return backend.leader(topic, partition) if backend else None

    def leaderless(self, topics: Iterable[str], every_s: float = 1.0) -> set[str]:
        """The backends holding a partition of the routed ``topics`` that has no known
        leader (created a moment ago, a leader being elected), not asked again for that
        in the last ``every_s``: asking again may find one. Marked as asked now."""
        now = time.monotonic()
        found: set[str] = set()
        for topic in topics:
            route = self.routes.topics.get(topic)
            for p in range((self.known_partition_count(topic) if route else None) or 0):
                cluster = route.cluster_of(p) if route else None
                backend = self.backends.get(cluster) if cluster else None
                if backend is None or cluster in found:
                    continue
                if now - self._asked_again.get(backend.name, 0.0) < every_s:
                    continue
                leader = backend.leader(topic, p)
                if leader is None or leader.broker < 0:
                    found.add(backend.name)
        for name in found:
            self._asked_again[name] = now
        return found

    async def refresh(self, names: Iterable[str]) -> None:
        """The named backends' metadata learned again (a failure only logged)."""
        chosen = [self.backends[n] for n in names]
        results = await asyncio.gather(*(b.refresh() for b in chosen), return_exceptions=True)
        for backend, result in zip(chosen, results, strict=True):
            if isinstance(result, Exception):
                log.warning("backend %s: metadata refresh failed: %s", backend.name, result)

    async def refresh_all(self) -> None:
        await self.refresh(list(self.backends))

    # ------------------------------------------------------------ placing partitions

    def target(self, cluster: str, topic: str, partition: int) -> split.Target | ErrorCode:
        """The broker of ``cluster`` that leads ``topic[partition]``."""
        if cluster in self.routes.shielded:
            return ErrorCode.not_leader_or_follower
        backend = self.backends.get(cluster)
        leader = backend.leader(topic, partition) if backend else None
        if leader is None or leader.broker < 0:
            self.soon_refresh(cluster)
            return ErrorCode.not_leader_or_follower
        return cluster, leader.broker

    def route(self, topic: str, item: Any, index: str) -> tuple[TopicRoute, int] | ErrorCode:
        """The route of ``topic`` and the partition ``item`` names in its field ``index``."""
        route = self.routes.topics.get(topic)
        if route is None:
            return ErrorCode.unknown_topic_or_partition
        return route, int(getattr(item, index))

    def routed(
        self, part: virtual.Part | ErrorCode, topic: str, p: int
    ) -> split.Routed | ErrorCode:
        """A moved partition's ``part`` sent to the broker leading it in its cluster."""
        if isinstance(part, ErrorCode):
            return part
        target = self.target(part.cluster, topic, p)
        return (
            target if isinstance(target, ErrorCode) else split.Routed(target, part.item, part.fix)
        )

    def placed(
        self,
        topic: str,
        item: Any,
        index: str,
        moved: Callable[[list[Segment], Any], virtual.Part | ErrorCode],
    ) -> split.Target | split.Routed | ErrorCode:
        """``item``'s partition to the broker leading it; a partition that moved goes
        where ``moved`` says its virtual offsets are (and its answer made virtual)."""
        found = self.route(topic, item, index)
        if isinstance(found, ErrorCode):
            return found
        route, p = found
        space = route.space(p)
        if space is None:
            return self.target(route.cluster_of(p), topic, p)
        return self.routed(moved(space, item), topic, p)

    # ------------------------------------------------------------ sending, health

    async def send(self, target: split.Target, body: Any, expect_response: bool = True) -> Any:
        cluster, broker = target
        answer = await self.backends[cluster].call_broker(
            broker,
            body,
            expect_response=expect_response,
            identity=self.principals.identity(cluster),
        )
        if cluster in self._down:
            self._down.discard(cluster)
            log.warning("backend %s answers again", cluster)
        return answer

    def answered(self, target: split.Target, codes: set[ErrorCode]) -> None:
        """A backend broker answered errors for some partitions: if it no longer leads
        them, learn the cluster's leaders again."""
        if codes & _STALE_LEADER:
            self.soon_refresh(target[0])

    def failed(self, target: split.Target, exc: Exception) -> ErrorCode:
        """The error code for the partitions a broker did not answer for."""
        if isinstance(exc, batches.BatchError):
            log.warning("refusing a produce request: %s", exc)
            return ErrorCode.corrupt_message
        if isinstance(exc, AuthenticationError) and self.principals.identity(target[0]):
            log.warning("backend %s refused a principal's mapped credentials: %s", target[0], exc)
            return ErrorCode.topic_authorization_failed
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
        self.soon_refresh(cluster)
        return ErrorCode.not_leader_or_follower

    def soon_refresh(self, cluster: str) -> None:
        backend = self.backends.get(cluster)
        if backend is not None:
            task = asyncio.get_running_loop().create_task(backend.refresh())
            task.add_done_callback(quiet)


def quiet(task: asyncio.Task[Any]) -> None:
    """A background task's failure, logged at debug level only."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("background refresh failed: %s", task.exception())


async def quietly(step: Awaitable[Any]) -> None:
    """``step`` awaited; a backend that does not answer is only logged."""
    try:
        await step
    except BackendUnavailable as exc:
        log.info("refresh failed: %s", exc)


async def _no_acknowledgement(_topic: str, _partition: int, _epoch: int) -> None:
    """An instance without ZooKeeper (tests of the handlers alone)."""
