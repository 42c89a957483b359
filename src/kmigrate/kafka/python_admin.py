"""kafka-python's admin client, for what confluent-kafka has no API for (partition
reassignments, log-dir sizes, client quotas): configured from clusters.yaml like every
client, its errors translated to kmigrate's once, here.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    ClusterUnavailableError,
    ClusterUnreachableError,
    ConfigError,
    KafkaOperationError,
)

# kafka-python logs every refused connection at ERROR; kmigrate reports failures itself.
logging.getLogger("kafka").setLevel(logging.CRITICAL)


_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# librdkafka's TLS properties (clusters.yaml) and kafka-python's names for them.
_TLS = {
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
}


def _tls_options(conf: dict[str, str]) -> dict[str, Any]:
    """kafka-python's TLS options from the cluster's librdkafka properties: the same CA,
    client certificate and key, and host name checking unless it was turned off."""
    options: dict[str, Any] = {name: conf[key] for key, name in _TLS.items() if conf.get(key)}
    checking = conf.get("ssl.endpoint.identification.algorithm", "https").lower()
    options["ssl_check_hostname"] = checking != "none"
    return options


class KafkaPythonAdmin:
    """kafka-python's admin client for one cluster, configured as clusters.yaml says,
    with its errors translated once (subclasses call ``_call``)."""

    CLIENT_ID = "kmigrate"

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        conf = cluster.as_librdkafka()
        options: dict[str, Any] = {
            "bootstrap_servers": cluster.bootstrap_servers.split(","),
            "client_id": self.CLIENT_ID,
            "request_timeout_ms": int(cluster.timeout_s * 1000) + 5000,
        }
        protocol = conf.get("security.protocol", "PLAINTEXT").upper()
        if protocol != "PLAINTEXT":
            options["security_protocol"] = protocol
        if protocol.startswith("SASL"):
            mechanism = conf.get("sasl.mechanism", "GSSAPI").upper()
            if mechanism not in _MECHANISMS:
                raise ConfigError(
                    f"cluster '{cluster.name}': kmigrate's quota and reassignment commands "
                    f"log in with SASL {' or '.join(_MECHANISMS)}, not {mechanism}"
                )
            options["sasl_mechanism"] = mechanism
            options["sasl_plain_username"] = conf.get("sasl.username")
            options["sasl_plain_password"] = conf.get("sasl.password")
        if protocol.endswith("SSL"):
            options |= _tls_options(conf)
        self._options = options
        self._connected: Any = self._connect()

    def _connect(self) -> Any:
        # kafka-python: imported here, not at start-up (`kmigrate reassign --help`).
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            return KafkaAdminClient(**self._options)
        except KafkaError:
            raise ClusterUnreachableError(
                f"cannot reach cluster '{self.cluster.name}' at {self.cluster.bootstrap_servers}",
                cluster=self.cluster.name,
                condition="no broker reachable",
            ) from None

    @property
    def _client(self) -> Any:
        """The connected client; a new one, bootstrapped afresh, after a failure that
        passes. kafka-python 3.0 keeps the controller id it learned until a controller
        answers NOT_CONTROLLER, and after every broker of a cluster was killed and
        started again one client kept failing with KafkaConnectionError for minutes
        while new clients answered at once: an outage waited out must end with it."""
        if self._connected is None:
            self._connected = self._connect()
        return self._connected

    def _drop(self) -> None:
        client, self._connected = self._connected, None
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self._drop()

    def _call(self, action: str, step: Any, *args: Any, **kwargs: Any) -> Any:
        """``step``; a condition that passes (a timeout, a controller moving, a broker
        restarting) becomes ClusterUnavailableError, which a long-running caller waits
        out; any other failure, KafkaOperationError."""
        from kafka.errors import KafkaError, UnknownBrokerIdError, UnknownTopicOrPartitionError

        try:
            return step(*args, **kwargs)
        except KafkaError as exc:
            # UnknownBrokerIdError is kafka-python's own: the broker it would ask (the
            # controller, say) just left the metadata it holds, as a restarting one does.
            passes = exc.retriable or isinstance(exc, UnknownBrokerIdError)
            if passes and not isinstance(exc, UnknownTopicOrPartitionError):
                self._drop()
                raise ClusterUnavailableError(
                    f"cluster '{self.cluster.name}': {action} did not complete "
                    f"({type(exc).__name__}); try again once the cluster answers",
                    cluster=self.cluster.name,
                    condition=f"{action}: {type(exc).__name__}",
                ) from None
            raise KafkaOperationError(
                f"cluster '{self.cluster.name}': {action} failed ({type(exc).__name__}: {exc})"
            ) from None
