"""The gateway's side towards one backend cluster: a connection per broker (SASL when the
cluster's config asks for it), the cluster's partition leaders, and its coordinators (of
groups and of transactional ids). asyncio; the gateway sends the messages its clients
sent (re-addressed) and gets the brokers' answers back as values."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.config import ClusterConfig
from kmigrate.errors import AuthenticationError, ConfigError
from kmigrate.gateway.protocol import wire
from kmigrate.gateway.protocol.sasl import MECHANISMS, SaslClient

log = logging.getLogger("kmigrate.gateway.backend")  # as before the move (logs)
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 35.0  # above Kafka's default 30 s request/fetch waits
FETCH = 1  # api key


class BackendUnavailable(Exception):
    """A backend broker could not be reached or dropped the connection: retriable for
    the partitions it serves. ``sent``: the request had gone out, so the broker may
    have acted on it (a write may be in the log) although no answer came back."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class BrokerLink:
    """One connection to one backend broker; requests may overlap (pipelined), answers
    come back in order and are matched by correlation id."""

    def __init__(
        self, host: str, port: int, client_id: str, sasl: Callable[[], SaslClient] | None
    ) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.sasl = sasl
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self._next = 0
        self._opening: asyncio.Lock = asyncio.Lock()
        self._reader_task: asyncio.Task[None] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def call(self, body: Any, *, expect_response: bool = True) -> Any:
        writer = await self._open()
        self._next = (self._next + 1) % 2**31
        correlation = self._next
        api_key, version = type(body).__api_key__, type(body).__version__
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if expect_response:
            self._pending[correlation] = (future, api_key, version)
        writer.write(wire.encode_request(body, correlation, self.client_id))
        try:
            await writer.drain()
        except OSError as exc:
            self._broken(f"write failed: {exc}")
            raise BackendUnavailable(f"{self.address}: {exc}", sent=True) from None
        if not expect_response:
            return None
        try:
            return await asyncio.wait_for(future, REQUEST_TIMEOUT_S)
        except TimeoutError:
            self._broken("no answer in time")
            raise BackendUnavailable(
                f"{self.address}: no answer in {REQUEST_TIMEOUT_S:g}s", sent=True
            ) from None

    async def _open(self) -> asyncio.StreamWriter:
        if self._writer is not None:
            return self._writer
        async with self._opening:
            if self._writer is not None:
                return self._writer
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError) as exc:
                raise BackendUnavailable(f"{self.address}: {exc or 'connect timed out'}") from None
            self._writer = writer
            self._reader_task = asyncio.create_task(self._read(reader))
            if self.sasl is not None:
                try:
                    await self._authenticate(self.sasl())
                except BaseException:
                    self._broken("authentication failed")
                    raise
            return writer

    async def _authenticate(self, client: SaslClient) -> None:
        handshake = wire.request_type(17, 1)(mechanism=client.mechanism)
        answer = await self._raw_call(handshake)
        if answer.error_code != ErrorCode.none:
            raise AuthenticationError(
                f"{self.address} does not offer SASL {client.mechanism} "
                f"(it offers {', '.join(answer.mechanisms)})"
            )
        authenticate = wire.request_type(36, 2)
        reply = await self._raw_call(authenticate(auth_bytes=client.first()))
        self._check_sasl(reply)
        if client.mechanism != "PLAIN":
            reply = await self._raw_call(authenticate(auth_bytes=client.answer(reply.auth_bytes)))
            self._check_sasl(reply)
            client.check_final(reply.auth_bytes)

    def _check_sasl(self, reply: Any) -> None:
        if reply.error_code != ErrorCode.none:
            raise AuthenticationError(
                f"{self.address} refused the gateway's credentials: {reply.error_message}"
            )

    async def _raw_call(self, body: Any) -> Any:
        """A call on the connection being opened (before it is usable by others)."""
        assert self._writer is not None
        self._next = (self._next + 1) % 2**31
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = (future, type(body).__api_key__, type(body).__version__)
        self._writer.write(wire.encode_request(body, self._next, self.client_id))
        await self._writer.drain()
        return await asyncio.wait_for(future, REQUEST_TIMEOUT_S)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        reason = "closed by the broker"
        try:
            while True:
                frame = await wire.read_frame(reader)
                if frame is None:
                    break
                correlation = wire.correlation_of(frame)
                entry = self._pending.pop(correlation, None)
                if entry is None:
                    reason = f"an answer to unknown request {correlation}"
                    break
                future, api_key, version = entry
                try:
                    _, body = wire.decode_response(frame, api_key, version)
                except wire.FrameError as exc:
                    reason = str(exc)
                    break
                if not future.done():
                    future.set_result(body)
        except (OSError, wire.FrameError) as exc:
            reason = str(exc)
        finally:
            self._broken(reason)

    def _broken(self, reason: str) -> None:
        if self._writer is not None:
            log.info("backend connection %s closed: %s", self.address, reason)
            self._writer.close()
        self._writer = None
        pending, self._pending = self._pending, {}
        for future, _, _ in pending.values():
            if not future.done():
                future.set_exception(BackendUnavailable(f"{self.address}: {reason}", sent=True))

    def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        self._broken("the gateway closed it")


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
        self.client_id = client_id
        self.bootstrap = [_host_port(s) for s in config.bootstrap_servers.split(",")]
        self._sasl = sasl_factory(config)
        self.view = ClusterView()
        self.versions: dict[int, tuple[int, int]] = {}
        self._links: dict[tuple[str, int, str], BrokerLink] = {}
        self._fetch_links: dict[tuple[str, int, str], list[BrokerLink]] = {}  # idle ones
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> broker
        self._refreshing: asyncio.Lock = asyncio.Lock()

    # ------------------------------------------------------------ connections

    def link(self, host: str, port: int, identity: Identity | None = None) -> BrokerLink:
        """The connection to ``host:port`` as ``identity`` (None: the gateway's own)."""
        key = (host, port, identity.name if identity else "")
        if key not in self._links:
            sasl = identity.sasl if identity else self._sasl
            self._links[key] = BrokerLink(host, port, self.client_id, sasl)
        return self._links[key]

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
        idle = self._fetch_links.setdefault((*address, identity.name if identity else ""), [])
        sasl = identity.sasl if identity else self._sasl
        link = idle.pop() if idle else BrokerLink(*address, self.client_id, sasl)
        try:
            answer = await link.call(body)
        except BaseException:  # broken, or given up on (cancelled): never reused
            link.close()
            raise
        idle.append(link)
        return answer

    async def call_any(self, body: Any) -> Any:
        """``body`` sent to the first broker that answers (known brokers, then bootstrap)."""
        failures = []
        for address in [*self.view.brokers.values(), *self.bootstrap]:
            try:
                return await self.link(*address).call(body)
            except BackendUnavailable as exc:
                failures.append(str(exc))
        raise BackendUnavailable(f"cluster {self.name}: no broker answers ({failures[-1]})")

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
        for link in [*self._links.values(), *(k for ks in self._fetch_links.values() for k in ks)]:
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


def _host_port(server: str) -> tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    return host, int(port)


def sasl_factory(config: ClusterConfig) -> Callable[[], SaslClient] | None:
    """How the gateway authenticates to ``config``'s brokers (None: it does not)."""
    conf = config.as_librdkafka()  # secrets stay in memory, never in a message
    protocol = conf.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return None
    if protocol != "SASL_PLAINTEXT":
        raise ConfigError(
            f"cluster '{config.name}': the gateway reaches backends over PLAINTEXT or "
            f"SASL_PLAINTEXT only (security.protocol is {protocol})"
        )
    mechanism = conf.get("sasl.mechanism", "PLAIN").upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(
            f"cluster '{config.name}': SASL mechanism {mechanism} is not one the gateway "
            f"speaks ({', '.join(MECHANISMS)})"
        )
    username, password = conf.get("sasl.username", ""), conf.get("sasl.password", "")
    return lambda: SaslClient(mechanism, username, password)
