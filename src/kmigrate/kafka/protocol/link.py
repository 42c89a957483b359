"""One pipelined connection to one Kafka broker, logged in with SASL when the cluster's
config asks for it: requests may overlap, answers come back in order and are matched by
correlation id, as kio values. The gateway's backends and the mirror's byte copy both
talk to brokers through it."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.codec.sasl import MECHANISMS, SaslClient
from kmigrate.errors import AuthenticationError, ConfigError
from kmigrate.kafka.protocol import wire

log = logging.getLogger("kmigrate.gateway.backend")  # as before the move (logs)
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 35.0  # above Kafka's default 30 s request/fetch waits


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
        self,
        host: str,
        port: int,
        client_id: str,
        sasl: Callable[[], SaslClient] | None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.tls = tls
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
                    asyncio.open_connection(
                        self.host,
                        self.port,
                        ssl=self.tls,
                        server_hostname=self.host if self.tls else None,
                    ),
                    CONNECT_TIMEOUT_S,
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
            log.info("connection to broker %s closed: %s", self.address, reason)
            self._writer.close()
        self._writer = None
        pending, self._pending = self._pending, {}
        for future, _, _ in pending.values():
            if not future.done():
                future.set_exception(BackendUnavailable(f"{self.address}: {reason}", sent=True))

    def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
        self._broken("closed by kmigrate")


def host_port(server: str) -> tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    return host, int(port)


_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")


def _protocol(conf: Mapping[str, Any], cluster: str) -> str:
    protocol = str(conf.get("security.protocol", "PLAINTEXT")).upper()
    if protocol not in _PROTOCOLS:
        raise ConfigError(
            f"cluster '{cluster}': security.protocol {protocol} is not one of "
            f"{', '.join(_PROTOCOLS)}"
        )
    return protocol


def sasl_of(conf: Mapping[str, Any], cluster: str) -> Callable[[], SaslClient] | None:
    """How to log in to the brokers of ``cluster``, whose librdkafka settings are
    ``conf`` (None: no login). Secrets stay in memory, never in a message."""
    if not _protocol(conf, cluster).startswith("SASL"):
        return None
    mechanism = str(conf.get("sasl.mechanism", "PLAIN")).upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(
            f"cluster '{cluster}': SASL mechanism {mechanism} is not one kmigrate's own "
            f"Kafka connections speak ({', '.join(MECHANISMS)})"
        )
    username, password = str(conf.get("sasl.username", "")), str(conf.get("sasl.password", ""))
    return lambda: SaslClient(mechanism, username, password)


def tls_of(conf: Mapping[str, Any], cluster: str) -> ssl.SSLContext | None:
    """The TLS context for the brokers of ``cluster`` (None: no TLS), from the same
    librdkafka properties its clients use: the CA (the system's when none is named), a
    client certificate and key for mutual TLS, a CRL, and host name checking unless
    ``ssl.endpoint.identification.algorithm`` is ``none``."""
    if not _protocol(conf, cluster).endswith("SSL"):
        return None
    ca, crl = conf.get("ssl.ca.location") or None, conf.get("ssl.crl.location") or None
    cert, key = conf.get("ssl.certificate.location"), conf.get("ssl.key.location")
    try:
        context = ssl.create_default_context(cafile=ca)
        if cert:
            password = conf.get("ssl.key.password") or None
            context.load_cert_chain(cert, key or None, password=password)
        if crl:
            context.load_verify_locations(crl)
            context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"cluster '{cluster}': the TLS files of its ssl.* properties cannot be used: "
            f"{getattr(exc, 'strerror', None) or exc.__class__.__name__}"
        ) from None
    if str(conf.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    return context
