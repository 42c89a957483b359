"""Connections to one cluster's brokers, as an async Kafka client keeps them: one link
per broker address (and per identity a caller speaks as), made on first use and kept,
and any broker asked in turn when no broker in particular is needed. The byte copy's
clusters (kmigrate.mirror.byte_cluster) and the gateway's backends
(kmigrate.gateway.protocol.backend) are both this, with what each adds on top."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable
from typing import Any

from kmigrate.codec.sasl import SaslClient
from kmigrate.kafka.protocol.link import BackendUnavailable, BrokerLink, host_port

Address = tuple[str, int]
Login = Callable[[], SaslClient]


class Brokers:
    """The brokers of cluster ``name`` reached from ``bootstrap`` (its
    bootstrap.servers), logging in with ``sasl`` over ``tls`` unless told otherwise."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        client_id: str,
        sasl: Login | None,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.name = name
        self.bootstrap = [host_port(s) for s in bootstrap.split(",")]
        self.client_id = client_id
        self.sasl, self.tls = sasl, tls
        self._links: dict[tuple[str, int, str], BrokerLink] = {}

    def link(
        self, host: str, port: int, as_whom: str = "", sasl: Login | None = None
    ) -> BrokerLink:
        """The connection to ``host:port``: the cluster's own login, or with ``as_whom``
        one of its own logged in with ``sasl`` (a client the gateway speaks for)."""
        key = (host, port, as_whom)
        if key not in self._links:
            self._links[key] = self.new_link((host, port), as_whom, sasl)
        return self._links[key]

    def new_link(
        self, address: Address, as_whom: str = "", sasl: Login | None = None
    ) -> BrokerLink:
        """A connection not kept here (the caller closes it)."""
        return BrokerLink(*address, self.client_id, sasl if as_whom else self.sasl, self.tls)

    async def call_any(self, body: Any, first: Iterable[Address] = ()) -> Any:
        """``body`` sent to the first broker that answers: ``first`` (brokers the caller
        knows), then the bootstrap list; BackendUnavailable when none does."""
        failure: Exception | None = None
        for address in [*first, *self.bootstrap]:
            try:
                return await self.link(*address).call(body)
            except (BackendUnavailable, OSError, TimeoutError) as exc:
                failure = exc
        raise BackendUnavailable(f"cluster {self.name}: no broker answers ({failure})")

    def close(self) -> None:
        for link in self._links.values():
            link.close()
