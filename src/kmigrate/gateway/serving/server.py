"""One gateway instance: an asyncio server speaking the Kafka protocol to clients.

Per client connection, requests are read one after the other and handled at once
(a client pipelines them), and the answers are written back in the order the requests
came, as Kafka requires. A frame the gateway cannot read (malformed, too large, an API
or version it did not offer) closes that connection with one log line; nothing else is
affected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import uvicorn

from kmigrate.config import ClusterConfig
from kmigrate.errors import ConfigError
from kmigrate.gateway.control import dis_api
from kmigrate.gateway.control.aging import Audit, age_once
from kmigrate.gateway.control.fences import Fences
from kmigrate.gateway.control.marks import MARK_EVERY_S, Key, Store, encode
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.principals import ACTING
from kmigrate.gateway.control.producers import ProducerIds
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.gateway.protocol.backend import Backend, BackendUnavailable
from kmigrate.gateway.serving.authentication import SASL_APIS, SASL_VERSIONS, Access, Authenticator
from kmigrate.gateway.serving.dispatch import Gateway
from kmigrate.gateway.serving.sequences import SequenceGuard
from kmigrate.kafka.protocol import wire

log = logging.getLogger("kmigrate.gateway.server")  # as before the move (logs)
READ_ROUTES_S = 30.0


# Requests to a group or transaction coordinator are handled one after another on a
# connection, in the order the client sent them, as a Kafka broker handles every request
# of a connection: an asynchronous offset commit then a synchronous one (a Java consumer
# closing) must reach the group home in that order, or the older offsets win. Other
# requests (produce, fetch, metadata) are handled concurrently; answers always go back
# in order. OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
# InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit.
IN_ORDER = frozenset({8, 9, 11, 12, 13, 14, 22, 24, 25, 26, 28})


class Connection:
    def __init__(
        self,
        gateway: Gateway,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        access: Access | None = None,
    ) -> None:
        self.gateway = gateway
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._answers: asyncio.Queue[asyncio.Task[bytes | None] | None] = asyncio.Queue(maxsize=64)
        self._sequences = SequenceGuard()
        self._ordered: asyncio.Task[bytes | None] | None = None  # the last IN_ORDER one
        self.auth = Authenticator(access or Access(), self.peer, writer.get_extra_info("peercert"))

    async def serve(self) -> None:
        writer_task = asyncio.create_task(self._write_answers())
        try:
            if (refused := self.auth.refusal()) is not None:
                raise wire.FrameError(refused)
            ACTING.set(self.auth.principal)  # this connection's tasks act for it
            while True:
                frame = await wire.read_frame(self.reader)
                if frame is None:
                    break
                request = self._decode(frame)
                if not self.auth.allows(request.api_key):
                    raise wire.FrameError(
                        f"{wire.api_name(request.api_key)} before authenticating (SASL required)"
                    )
                after = self._ordered if request.api_key in IN_ORDER else None
                task = asyncio.create_task(self._answer(request, after))
                if request.api_key in IN_ORDER:
                    self._ordered = task
                await self._answers.put(task)
                if request.api_key in SASL_APIS:  # settled before the next request is read
                    await asyncio.wait([task])
                    ACTING.set(self.auth.principal)
                    if self.auth.failed:
                        break
        except wire.FrameError as exc:
            log.warning("closing client connection %s: %s", self.peer, exc)
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:  # the instance is stopping
            writer_task.cancel()
            self.writer.close()
            return
        await self._answers.put(None)
        with contextlib.suppress(Exception):
            await writer_task
        self.writer.close()

    def _decode(self, frame: bytes) -> wire.Request:
        api_key, version = wire.peek_key_version(frame)
        if api_key != 18 and not self.gateway.supports(api_key, version):
            raise wire.FrameError(
                f"{wire.api_name(api_key)} v{version}, which the gateway does not offer"
            )
        if api_key == 18 and not self.gateway.supports(18, version):
            # A newer client: answer in v0 with UNSUPPORTED_VERSION and the gateway's
            # ranges, so it asks again in a version both know (KIP-511).
            correlation = int.from_bytes(frame[4:8], "big", signed=True)
            return wire.Request(18, version, correlation, None, None)
        return wire.decode_request(frame)

    async def _answer(
        self, request: wire.Request, after: asyncio.Task[bytes | None] | None = None
    ) -> bytes | None:
        if after is not None:  # its answer first, whatever it was
            await asyncio.wait([after])
        started = time.perf_counter()
        try:
            if request.api_key in SASL_APIS:
                body = await self.auth.answer(request)
            else:
                body = await self.gateway.handle(request, self._sequences)
        except BackendUnavailable as exc:
            log.info(
                "client %s: %s v%s: %s; closing the connection (the client retries)",
                self.peer,
                wire.api_name(request.api_key),
                request.version,
                exc,
            )
            raise
        answer = None if body is None else wire.encode_response(request.correlation_id, body)
        self.gateway.timings.record(wire.api_name(request.api_key), time.perf_counter() - started)
        return answer

    async def _write_answers(self) -> None:
        while True:
            task = await self._answers.get()
            if task is None:
                return
            try:
                data = await task
            except Exception:
                self.writer.close()
                self._drain_rest()
                return
            if data is not None:
                self.writer.write(data)
                await self.writer.drain()

    def _drain_rest(self) -> None:
        while not self._answers.empty():
            task = self._answers.get_nowait()
            if task is not None:
                task.cancel()


def run_until_signalled(main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``main`` on uvloop where it is installed; SIGTERM and SIGINT set the event it
    gets, which stops it."""

    async def body() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    try:
        import uvloop

        uvloop.run(body())
    except ImportError:
        asyncio.run(body())


async def run_instance(
    name: str,
    me: Instance,
    clusters: list[ClusterConfig],
    group_home: str,
    registry: Registry,
    ready: Callable[[Gateway], None] = lambda _g: None,
    stop: asyncio.Event | None = None,
    age_every_s: float = 60.0,
    http: tuple[str, int] | None = None,
    audit: Audit = lambda _a, _s, _d: None,
    access: Access | None = None,
) -> None:
    """Serve until ``stop`` is set: start backends, listen, register, read the routes
    (and the migrations, whose fences this instance must honour from its first request:
    seed 000's start barrier), then serve, following routes and instances through
    ZooKeeper watches."""
    backends = {c.name: Backend(c, f"kmigrate-gateway-{me.node_id}") for c in clusters}
    producer_ids = ProducerIds(registry.zk, registry.path, backends.__getitem__)

    async def acknowledge(topic: str, partition: int, epoch: int) -> None:
        await asyncio.to_thread(registry.acknowledge_fence, topic, partition, epoch, me.node_id)

    gateway = Gateway(name, me, backends, group_home, producer_ids, Fences(acknowledge))
    gateway.edit_routes, gateway.read_routes = registry.change_routes, registry.read_routes_now
    gateway.mark_store.store = _marks_stored_by(registry, me.node_id)
    await gateway.start()
    access = access or Access()
    gateway.principals = access.principals
    if access.sasl is not None:
        gateway.versions.update(SASL_VERSIONS)
    loop = asyncio.get_running_loop()
    routes_known = asyncio.Event()

    on_routes = _following_routes(gateway, registry, me, routes_known)

    def on_instances(found: list[Instance]) -> None:
        loop.call_soon_threadsafe(_set_instances, gateway, found)

    try:
        server = await asyncio.start_server(
            lambda r, w: Connection(gateway, r, w, access).serve(),
            me.host,
            me.port,
            ssl=access.ssl,
            reuse_address=True,
            start_serving=False,
        )
    except OSError as exc:
        gateway.close()
        raise ConfigError(f"cannot listen on {me.host}:{me.port}: {exc.strerror}") from None
    try:
        # Registered first, routes read after: a migration that fences writes from now on
        # either waits for this instance's acknowledgement or is seen in that first read.
        await asyncio.to_thread(registry.register, me)
        await asyncio.to_thread(registry.watch_routes, on_routes)
        try:
            await asyncio.wait_for(routes_known.wait(), READ_ROUTES_S)
        except TimeoutError:
            raise ConfigError(
                f"could not read the routing table within {READ_ROUTES_S:g}s; not serving"
            ) from None
        await asyncio.to_thread(registry.watch_instances, on_instances)
        web = await _http(gateway, registry, http) if http else None
        await server.start_serving()
        ready(gateway)
        tending = asyncio.create_task(producer_ids.tend_forever())
        timer = asyncio.create_task(
            _age_forever(
                gateway, registry, {c.name: c for c in clusters}, group_home, age_every_s, audit
            )
        )
        marking = asyncio.create_task(_store_marks_forever(gateway))
        await (stop or asyncio.Event()).wait()
        tending.cancel()
        timer.cancel()
        marking.cancel()
        if web is not None:
            web.should_exit = True
    finally:
        server.close()
        gateway.close()
        # Timer passes blocked on an unreachable ensemble would keep the process alive
        # (threads are joined at exit): ending the session makes them fail at once.
        registry.close()
        for api, numbers in gateway.timings.summary().items():
            log.info("handled %s: %s", api, ", ".join(f"{k} {v:g}" for k, v in numbers.items()))


class _EmbeddedServer(uvicorn.Server):
    """uvicorn on the instance's own event loop; the instance handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _http(gateway: Gateway, registry: Registry, where: tuple[str, int]) -> uvicorn.Server:
    """The DIS stream API on ``where``, started before the Kafka endpoint serves."""
    secret = await asyncio.to_thread(registry.shared_secret)
    config = uvicorn.Config(
        dis_api.create_app(gateway, secret),
        host=where[0],
        port=where[1],
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    web = _EmbeddedServer(config)
    task = asyncio.create_task(web.serve())
    while not web.started:
        if task.done():
            raise ConfigError(f"cannot serve the DIS API on {where[0]}:{where[1]} (port in use?)")
        await asyncio.sleep(0.02)
    return web


def _marks_stored_by(registry: Registry, node_id: int) -> Store:
    async def store(high: Mapping[Key, int]) -> None:
        # encoded off the event loop too: the blob holds every partition seen
        await asyncio.to_thread(lambda: registry.store_marks(node_id, encode(high)))

    return store


async def _store_marks_forever(gateway: Gateway) -> None:
    """Marks no fetch waited for (a write's offset) stored within MARK_EVERY_S."""
    while True:
        await asyncio.sleep(MARK_EVERY_S)
        with contextlib.suppress(Exception):  # ZooKeeper away: logged, tried again
            await gateway.mark_store.store_changes()


async def _age_forever(
    gateway: Gateway,
    registry: Registry,
    clusters: dict[str, ClusterConfig],
    group_home: str,
    every_s: float,
    audit: Audit,
) -> None:
    """The aging timer, run by the live instance with the lowest id."""
    while True:
        await asyncio.sleep(every_s)
        if gateway.me.node_id != min(i.node_id for i in gateway.live_instances()):
            continue
        if not any(r.migrations for r in gateway.routes.topics.values()):
            continue
        try:
            await asyncio.to_thread(age_once, registry, clusters, group_home, audit)
        except Exception as exc:  # a backend or ZooKeeper away: the next pass tries again
            log.info("aging pass failed: %s", exc)


def _following_routes(
    gateway: Gateway, registry: Registry, me: Instance, known: asyncio.Event
) -> Callable[[Any], None]:
    """The routing table watch's callback (on ZooKeeper's thread): the instance serves
    the table, then says in ZooKeeper which version it serves (`gateway shield` waits
    for every live instance to)."""
    loop = asyncio.get_running_loop()
    said = asyncio.Lock()
    saying: set[asyncio.Task[None]] = set()

    async def say() -> None:
        # One at a time, the version served when written: never an older one last.
        async with said:
            try:
                await asyncio.to_thread(
                    registry.acknowledge_routes, me.node_id, gateway.routes.version
                )
            except Exception as exc:  # ZooKeeper away: said again with the next table
                log.info("could not say which routing table this instance serves: %s", exc)

    def applied() -> None:
        task = asyncio.ensure_future(say())
        saying.add(task)
        task.add_done_callback(saying.discard)

    def on_routes(table: Any) -> None:
        loop.call_soon_threadsafe(_set_routes, gateway, table, known, applied)

    return on_routes


def _set_routes(
    gateway: Gateway,
    table: Any,
    known: asyncio.Event,
    applied: Callable[[], None],
) -> None:
    if table.version != gateway.routes.version:
        log.info("routing table version %s: %d topic(s)", table.version, len(table.topics))
    gateway.follow(table)
    known.set()
    # `gateway shield` and `unshield` return once every live instance said it.
    applied()


def _set_instances(gateway: Gateway, found: list[Instance]) -> None:
    gateway.instances = found
    log.info("live gateway instances: %s", ", ".join(str(i.node_id) for i in found) or "none")
