"""The gateway's side towards one backend cluster: a connection per broker (SASL when the
cluster's config asks for it), the cluster's partition leaders, and its coordinators (of
groups and of transactional ids). asyncio; the gateway sends the messages its clients
sent (re-addressed) and gets the brokers' answers back as values."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.codec.sasl import SaslClient
from kmigrate.config import ClusterConfig
from kmigrate.kafka.protocol import wire
from kmigrate.kafka.protocol.brokers import Brokers
from kmigrate.kafka.protocol.link import BackendUnavailable, BrokerLink, sasl_of, tls_of

FETCH = 1  # api key

__all__ = ["Backend", "BackendUnavailable", "BrokerLink", "ClusterView", "Identity", "Leader"]


@dataclass(frozen=True)
class Identity:
    """Who the gateway acts as towards a backend on a client's behalf: links are kept
    per identity, each authenticating with its own credentials."""

    name: str
    sasl: Callable[[], SaslClient] | None = field(repr=False, compare=False)


@dataclass
class Leader:
    broker: int
    epoch: int
    error: ErrorCode = ErrorCode.none


@dataclass
class ClusterView:
    """What the gateway last learned of one backend cluster's metadata."""

    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)  # topic -> partition count
    leaders: dict[tuple[str, int], Leader] = field(default_factory=dict)
    topic_errors: dict[str, ErrorCode] = field(default_factory=dict)
    controller: int = -1  # where topics are created and deleted (ZooKeeper mode)


class Backend:
    """One backend cluster of clusters.yaml."""

    def __init__(self, config: ClusterConfig, client_id: str) -> None:
        self.name = config.name
        self.brokers = Brokers(
            f"cluster {config.name}",
            config.bootstrap_servers,
            client_id,
            sasl_factory(config),
            tls_of(config.as_librdkafka(), config.name),
        )
        self.view = ClusterView()
        self.versions: dict[int, tuple[int, int]] = {}
        self._fetch_links: dict[tuple[str, int, str], list[BrokerLink]] = {}  # idle ones
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> broker
        self._refreshing: asyncio.Lock = asyncio.Lock()

    # ------------------------------------------------------------ connections

    def link(self, host: str, port: int, identity: Identity | None = None) -> BrokerLink:
        """The connection to ``host:port`` as ``identity`` (None: the gateway's own)."""
        if identity is None:
            return self.brokers.link(host, port)
        return self.brokers.link(host, port, identity.name, identity.sasl)

    async def call_broker(
        self,
        broker: int,
        body: Any,
        *,
        expect_response: bool = True,
        identity: Identity | None = None,
    ) -> Any:
        address = self.view.brokers.get(broker)
        if address is None:
            raise BackendUnavailable(f"cluster {self.name} has no broker {broker} (any more)")
        if type(body).__api_key__ == FETCH:
            return await self._fetch(address, body, identity)
        link = self.link(*address, identity)
        return await link.call(body, expect_response=expect_response)

    async def _fetch(self, address: tuple[str, int], body: Any, identity: Identity | None) -> Any:
        """A fetch on a connection of its own: a broker answers a connection's requests
        one at a time, so a fetch waiting there for data (up to its max wait) would hold
        every produce and fetch behind it; it waits like a client's own connection."""
        as_whom, sasl = (identity.name, identity.sasl) if identity else ("", None)
        idle = self._fetch_links.setdefault((*address, as_whom), [])
        link = idle.pop() if idle else self.brokers.new_link(address, as_whom, sasl)
        try:
            answer = await link.call(body)
        except BaseException:  # broken, or given up on (cancelled): never reused
            link.close()
            raise
        idle.append(link)
        return answer

    async def call_any(self, body: Any) -> Any:
        """``body`` sent to the first broker that answers (known brokers, then bootstrap)."""
        return await self.brokers.call_any(body, self.view.brokers.values())

    async def call_controller(self, body: Any) -> Any:
        """``body`` sent to the broker the cluster names its controller (a ZooKeeper-mode
        cluster creates and deletes topics only there; a KRaft broker forwards)."""
        if self.view.controller in self.view.brokers:
            try:
                return await self.call_broker(self.view.controller, body)
            except BackendUnavailable:
                pass
        return await self.call_any(body)

    def close(self) -> None:
        self.brokers.close()
        for link in (k for ks in self._fetch_links.values() for k in ks):
            link.close()

    # ------------------------------------------------------------ metadata

    async def start(self) -> None:
        """Learn the cluster's API versions and metadata."""
        await self._learn_versions()
        await self.refresh()

    async def _learn_versions(self) -> None:
        answer = await self.call_any(
            wire.request_type(18, 3)(
                client_software_name="kmigrate-gateway", client_software_version="1"
            )
        )
        self.versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys
        }

    async def refresh(self) -> None:
        """Every topic's partitions and leaders, again (one refresh at a time)."""
        if self._refreshing.locked():
            async with self._refreshing:
                return  # someone else just did it
        async with self._refreshing:
            if not self.versions:  # it did not answer when the gateway started
                await self._learn_versions()
            request = wire.request_type(3, 12)(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            answer = await self.call_any(request)
            view = ClusterView()
            view.brokers = {int(b.node_id): (b.host, int(b.port)) for b in answer.brokers}
            view.controller = int(answer.controller_id)
            for topic in answer.topics:
                if topic.error_code != ErrorCode.none:
                    view.topic_errors[topic.name] = topic.error_code
                    continue
                view.partitions[topic.name] = len(topic.partitions)
                for p in topic.partitions:
                    view.leaders[(topic.name, int(p.partition_index))] = Leader(
                        int(p.leader_id), int(p.leader_epoch), p.error_code
                    )
            self.view = view

    def leader(self, topic: str, partition: int) -> Leader | None:
        return self.view.leaders.get((topic, partition))

    # ------------------------------------------------------------ groups

    async def coordinator(self, key: str, key_type: int = 0) -> int:
        """The broker that coordinates group ``key`` (``key_type`` 0) or transactional id
        ``key`` (1) in this cluster (cached until it moves)."""
        if (key_type, key) in self._coordinators:
            return self._coordinators[(key_type, key)]
        answer = await self.call_any(wire.request_type(10, 3)(key=key, key_type=key_type))
        if answer.error_code != ErrorCode.none:
            what = "group" if key_type == 0 else "transactional id"
            raise BackendUnavailable(
                f"cluster {self.name}: no coordinator for {what} {key} ({answer.error_code.name})"
            )
        self.view.brokers.setdefault(int(answer.node_id), (answer.host, int(answer.port)))
        self._coordinators[(key_type, key)] = int(answer.node_id)
        return int(answer.node_id)

    def forget_coordinator(self, key: str, key_type: int = 0) -> None:
        self._coordinators.pop((key_type, key), None)


def sasl_factory(config: ClusterConfig) -> Callable[[], SaslClient] | None:
    """How the gateway authenticates to ``config``'s brokers (None: it does not)."""
    return sasl_of(config.as_librdkafka(), config.name)
