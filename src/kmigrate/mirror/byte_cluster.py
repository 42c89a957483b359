"""The byte copy's worker runtime and cluster client: one event loop per Python worker,
on a thread of its own, and per cluster its broker links (kmigrate.kafka.protocol) and
the partitions' leaders (Metadata), kept across tasks, so that a task costs no connect,
login or metadata request unless a leader moved or a connection broke."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata_v12

from kmigrate.kafka.protocol.brokers import Brokers
from kmigrate.kafka.protocol.link import BrokerLink, sasl_of, tls_of
from kmigrate.spark.kafka_range import config_key

T = TypeVar("T")

# kio's field types are NewTypes, built here from plain values.
MetadataRequest: Any = metadata_v12.MetadataRequest
MetadataRequestTopic: Any = metadata_v12.MetadataRequestTopic
CLIENT_ID = "kmigrate-mirror"


class Runtime:
    """The worker's event loop, on a thread of its own, and its connections and
    leaders, kept across tasks: a task costs no connect, login or metadata request
    unless a leader moved or a connection broke."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(
            target=self.loop.run_forever, name="kmigrate-byte-copy", daemon=True
        ).start()
        self.clusters: dict[tuple[str, str], Cluster] = {}
        atexit.register(self.close)

    def close(self) -> None:
        """Close every connection (their reader tasks end) before the process exits."""

        async def closing() -> None:
            for cluster in self.clusters.values():
                cluster.close()
            await asyncio.sleep(0)  # the cancelled readers finish

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(closing(), self.loop).result(timeout=5)

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    def cluster(self, conf: dict[str, Any], role: str) -> Cluster:
        key = (role, config_key(conf))
        if key not in self.clusters:
            self.clusters[key] = Cluster(conf, role)
        return self.clusters[key]


@functools.cache
def runtime() -> Runtime:
    """One per Python worker process (made in it, after Spark forked it)."""
    return Runtime()


class Cluster:
    """One cluster's broker links (kmigrate.kafka.protocol.brokers) and its partitions'
    leaders, from its librdkafka settings."""

    def __init__(self, conf: dict[str, Any], role: str) -> None:
        self.brokers = Brokers(
            f"the {role} cluster",
            str(conf["bootstrap.servers"]),
            CLIENT_ID,
            sasl_of(conf, role),
            tls_of(conf, role),
        )
        self.known: dict[tuple[str, int], tuple[str, int]] = {}  # leaders asked for
        self.topics_known: set[str] = set()
        self.addresses: dict[int, tuple[str, int]] = {}  # broker id -> address
        # the replica a leader said to read a partition from (KIP-392: the client's rack)
        self.preferred: dict[tuple[str, int], tuple[str, int]] = {}

    def link(self, address: tuple[str, int]) -> BrokerLink:
        return self.brokers.link(*address)

    async def call_any(self, body: Any) -> Any:
        return await self.brokers.call_any(body)

    def forget_leaders(self) -> None:
        self.known.clear()
        self.topics_known.clear()
        self.preferred.clear()

    async def leaders(self, topics: list[str]) -> dict[tuple[str, int], tuple[str, int]]:
        """(topic, partition) -> its leader's address (asked again for a topic not
        known yet, and after a task met a failure)."""
        if not all(t in self.topics_known for t in topics):
            self.known.update(await self._ask_leaders(topics))
            self.topics_known.update(topics)
        return self.known

    async def _ask_leaders(self, topics: list[str]) -> dict[tuple[str, int], tuple[str, int]]:
        request = MetadataRequest(
            topics=tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        answer = await self.call_any(request)
        brokers = {int(b.node_id): (b.host, int(b.port)) for b in answer.brokers}
        self.addresses.update(brokers)
        found = {}
        for topic in answer.topics:
            for p in topic.partitions:
                if p.error_code == ErrorCode.none and int(p.leader_id) in brokers:
                    found[(topic.name, int(p.partition_index))] = brokers[int(p.leader_id)]
        return found

    def close(self) -> None:
        self.brokers.close()
