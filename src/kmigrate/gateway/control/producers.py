"""Idempotent producers through the gateway.

A client's InitProducerId is answered by the group home cluster: that producer id and
epoch are what the client uses everywhere. On the group home its batches pass through
unchanged. Every other backend cluster allocates a producer id of its own (a fresh id
accepts any first sequence number), and the gateway rewrites the client's batches for
that cluster (kmigrate.codec.batches).

The translation is shared by all instances through ZooKeeper, first writer wins:

    <path>/producers/<client id>-<epoch>/<cluster>   "<backend id>:<backend epoch>"

so a partition keeps one backend producer id whichever instance forwards its batches,
and a retried batch is recognised as the same one by the broker after an instance dies.
Every instance touches the translations it uses once an hour; one not touched for a
week (its producer long gone: brokers forget idle producer ids after a day) is deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.protocol.backend import Backend, BackendUnavailable
from kmigrate.gateway.protocol.entities import build, item_type
from kmigrate.kafka.protocol.wire import request_type
from kmigrate.zookeeper import KazooClient, KazooException, NodeExistsError, NoNodeError

Key = tuple[int, int]  # (producer id, epoch) as the client knows them
log = logging.getLogger("kmigrate.gateway.producers")  # as before the move (logs)
TOUCH_EVERY_S = 3600.0
ALLOCATE_S = 10.0  # how long a loading coordinator is waited for
_NOT_YET = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
}
FORGET_AFTER_S = 7 * 24 * 3600.0


class ProducerIds:
    def __init__(self, zk: KazooClient, path: str, backends: Callable[[str], Backend]) -> None:
        self.zk = zk
        self.path = f"{path}/producers"
        self.backends = backends
        self._known: dict[tuple[Key, str], Key] = {}
        self._pending: dict[tuple[Key, str], asyncio.Future[Key]] = {}

    async def on(self, client: Key, cluster: str) -> Key:
        """The (id, epoch) that stand for ``client`` on ``cluster``."""
        key = (client, cluster)
        if key in self._known:
            return self._known[key]
        if key in self._pending:
            return await asyncio.shield(self._pending[key])
        future: asyncio.Future[Key] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            found = await self._find_or_make(client, cluster)
            self._known[key] = found
            future.set_result(found)
            return found
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning
            raise
        finally:
            del self._pending[key]

    async def _find_or_make(self, client: Key, cluster: str) -> Key:
        node = self._node(client, cluster)
        stored = await asyncio.to_thread(self._read, node)
        if stored is not None:
            return stored
        made = await allocate(self.backends(cluster))
        return await asyncio.to_thread(self._claim, node, made)

    def _node(self, client: Key, cluster: str) -> str:
        return f"{self.path}/{client[0]}-{client[1]}/{cluster}"

    def touch(self) -> None:
        """Mark the translations this instance uses as in use (their znodes' mtime)."""
        for (client, cluster), (pid, epoch) in list(self._known.items()):
            try:
                self.zk.set(self._node(client, cluster), f"{pid}:{epoch}".encode())
            except NoNodeError:
                self._known.pop((client, cluster), None)

    def forget_idle(self, now_ms: int | None = None) -> int:
        """Delete the translations of producers nobody touched for FORGET_AFTER_S;
        returns how many producers were forgotten."""
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        try:
            producers = self.zk.get_children(self.path)
        except NoNodeError:
            return 0
        forgotten = 0
        for producer in producers:
            base = f"{self.path}/{producer}"
            try:
                stats = [self.zk.get(f"{base}/{c}")[1] for c in self.zk.get_children(base)]
                if all(now_ms - stat.mtime > FORGET_AFTER_S * 1000 for stat in stats):
                    self.zk.delete(base, recursive=True)
                    forgotten += 1
            except NoNodeError:
                continue  # another instance was tending at the same time
        return forgotten

    def tend(self) -> int:
        self.touch()
        return self.forget_idle()

    async def tend_forever(self) -> None:
        while True:
            try:
                forgotten = await asyncio.to_thread(self.tend)
                if forgotten:
                    log.info("forgot the producer ids of %d producer(s) idle for a week", forgotten)
            except KazooException as exc:
                log.info("could not tend producer ids now: %s", exc)
            await asyncio.sleep(TOUCH_EVERY_S)

    def _read(self, node: str) -> Key | None:
        found = self.zk.exists(node)
        if found is None:
            return None
        raw, _ = self.zk.get(node)
        pid, epoch = raw.decode().split(":")
        return int(pid), int(epoch)

    def _claim(self, node: str, made: Key) -> Key:
        try:
            self.zk.create(node, f"{made[0]}:{made[1]}".encode(), makepath=True)
            return made
        except NodeExistsError:  # another instance was first: use its id
            found = self._read(node)
            assert found is not None
            return found


async def allocate(backend: Backend) -> Key:
    """A new idempotent (not transactional) producer id from ``backend``; a coordinator
    that is still loading (a broker just started) is asked again for ALLOCATE_S."""
    _, high = backend.versions.get(22, (0, 4))
    request = build(
        request_type(22, min(high, 4)),
        transactional_id=None,
        transaction_timeout=timedelta(milliseconds=60_000),
        producer_id=-1,
        producer_epoch=-1,
    )
    deadline = time.monotonic() + ALLOCATE_S
    while True:
        answer: Any = await backend.call_any(request)
        code = answer.error_code
        if code == ErrorCode.none:
            return int(answer.producer_id), int(answer.producer_epoch)
        if code not in _NOT_YET or time.monotonic() > deadline:
            raise BackendUnavailable(f"cluster {backend.name}: no producer id ({code.name})")
        await asyncio.sleep(0.1)


def describe_producers_request(topic: str, partitions: Iterable[int]) -> Any:
    """DescribeProducers (KIP-664) for ``partitions`` of ``topic``: each one's active
    producers with their last sequence, from the partition's leader."""
    request = request_type(61, 0)
    wanted = build(item_type(request, "topics"), name=topic, partition_indexes=tuple(partitions))
    return build(request, topics=(wanted,))
