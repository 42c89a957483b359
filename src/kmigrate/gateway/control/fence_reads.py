"""The reads a smooth move makes while its fence holds writes, connected beforehand.

Producers wait for every millisecond between the fence and the flip. Opening a client
inside it (a librdkafka admin client, the Kafka protocol connection that asks for open
transactions and producer states) costs more than the reads themselves, so a move opens
them all, and makes one request on each, before it writes the fence; inside it the reads
that do not depend on each other run at once (``Reads.together``).

The protocol connections live on an event loop of their own thread, so a blocking caller
(the mover) can start a coroutine there and wait for it, or start several and wait for
all.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from kmigrate.config import Settings
from kmigrate.errors import ConflictError, KMigrateError
from kmigrate.gateway.control import transactions
from kmigrate.gateway.control.producers import describe_producers_request
from kmigrate.gateway.protocol.backend import Backend
from kmigrate.kafka.admin import ClusterAdmin

T = TypeVar("T")
CLIENT_ID = "kmigrate-gateway-migrate"
Producers = dict[int, dict[tuple[int, int], int]]  # partition -> (id, epoch) -> last sequence


class Reads:
    """Admin clients of the origins and the target, and protocol connections to the
    origins, opened and used once before a fence (``warm``); ``close`` ends them all."""

    def __init__(self, settings: Settings, origins: Iterable[str], target: str) -> None:
        self._origins = sorted(set(origins))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="kmigrate-fence-reads", daemon=True
        )
        self._thread.start()
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="kmigrate-fence-read")
        self.admins = {n: ClusterAdmin(settings.cluster(n)) for n in {*self._origins, target}}
        self.backends = {n: Backend(settings.cluster(n), CLIENT_ID) for n in self._origins}

    def warm(self, topic: str, partitions: Iterable[int]) -> None:
        """Connect everything: an end-offset read on every cluster, the origins'
        versions and metadata."""
        keys = [(topic, p) for p in partitions]

        def connected(admin: ClusterAdmin) -> None:
            # Only to connect: a topic created a moment ago may not answer yet, and the
            # read inside the fence asks again (and fails there as it would have).
            with contextlib.suppress(KMigrateError):
                admin.partition_offsets(keys, "latest")

        self.together(
            *(lambda a=a: connected(a) for a in self.admins.values()),
            *(lambda b=b: self.wait(transactions.started(b)) for b in self.backends.values()),
        )

    def close(self) -> None:
        for admin in self.admins.values():
            admin.close()

        async def closed() -> None:
            for backend in self.backends.values():
                backend.close()

        self.wait(closed())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._pool.shutdown(wait=False)

    # ------------------------------------------------------------ running

    def wait(self, step: Coroutine[Any, Any, T]) -> T:
        """``step`` run on the connections' loop; its result (or exception)."""
        return asyncio.run_coroutine_threadsafe(step, self._loop).result()

    def together(self, *steps: Callable[[], Any]) -> list[Any]:
        """Blocking ``steps`` at once; their results in order (the first failure raised
        once all ended)."""
        futures: list[Future[Any]] = [self._pool.submit(step) for step in steps]
        return [f.result() for f in futures]

    # ------------------------------------------------------------ the reads

    def ends(self, cluster: str, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        """Each partition's end offset (high watermark) on ``cluster``."""
        found = self.admins[cluster].partition_offsets([(topic, p) for p in partitions], "latest")
        return {p: o for (_, p), o in found.items()}

    def transactions_closed(
        self,
        origins: Mapping[int, str],
        topic: str,
        timeout_s: float,
        progress: Callable[[str], None],
    ) -> None:
        """Until no open transaction covers a partition on its origin
        (kmigrate.gateway.control.transactions)."""
        backends = list(self.backends.values())
        self.wait(transactions.until_closed(backends, origins, topic, timeout_s, progress))

    def producers(self, cluster: str, topic: str, partitions: list[int]) -> Producers:
        """Per partition of ``topic`` on ``cluster``, its idempotent producers' last
        sequence numbers (DescribeProducers on each leader)."""
        return self.wait(_describe_producers(self.backends[cluster], topic, partitions))


async def _describe_producers(backend: Backend, topic: str, partitions: list[int]) -> Producers:
    try:
        return await _describe_on_leaders(backend, topic, partitions)
    except ConflictError:
        await backend.refresh()  # leadership moved since the backend learned it: once more
        return await _describe_on_leaders(backend, topic, partitions)


async def _describe_on_leaders(backend: Backend, topic: str, partitions: list[int]) -> Producers:
    by_leader: dict[int, list[int]] = {}
    for p in partitions:
        leader = backend.leader(topic, p)
        if leader is None or leader.broker < 0:
            raise ConflictError(f"{topic}[{p}] has no leader on '{backend.name}' now; try again")
        by_leader.setdefault(leader.broker, []).append(p)
    found: Producers = {}
    for broker, mine in by_leader.items():
        answer = await backend.call_broker(broker, describe_producers_request(topic, mine))
        for t in answer.topics:
            for reply in t.partitions:
                if reply.error_code != 0:
                    raise ConflictError(
                        f"cluster '{backend.name}' did not describe the producers of "
                        f"{topic}[{reply.partition_index}]: {reply.error_code.name}"
                    )
                found[int(reply.partition_index)] = {
                    (int(s.producer_id), int(s.producer_epoch)): int(s.last_sequence)
                    for s in reply.active_producers
                }
    return found
