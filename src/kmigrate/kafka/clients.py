"""Client construction: the one place a cluster config becomes a confluent-kafka client.

librdkafka logs connection trouble to stderr by default; kmigrate routes it to the
``kmigrate.kafka.client`` logger instead and remembers the last error per client,
so a failed call can say *why* a cluster was unreachable in one line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kmigrate.client_properties import refusal
from kmigrate.config import ClusterConfig
from kmigrate.errors import ConfigError

log = logging.getLogger("kmigrate.kafka.client")
C = TypeVar("C")


@dataclass
class ErrorTrap:
    """Keeps the last client-level error librdkafka reported (e.g. connection refused)."""

    last: KafkaError | None = None
    seen: list[KafkaError] = field(default_factory=list)

    def __call__(self, error: KafkaError) -> None:
        self.last = error
        self.seen.append(error)
        del self.seen[:-20]
        log.debug("client error: %s", error.str())

    def reason(self) -> str | None:
        return self.last.str() if self.last is not None else None


class _DebugLog:
    """librdkafka's log lines, all at DEBUG: kmigrate reports failures itself, once."""

    def log(self, _level: int, msg: str, *args: Any) -> None:
        log.debug(msg, *args)


def _base_config(cluster: ClusterConfig, trap: ErrorTrap, extra: dict[str, Any]) -> dict[str, Any]:
    conf: dict[str, Any] = cluster.as_librdkafka()
    conf.setdefault("client.id", "kmigrate")
    conf.setdefault("socket.connection.setup.timeout.ms", int(cluster.timeout_s * 1000))
    conf.update(extra)
    conf["error_cb"] = trap
    conf["logger"] = _DebugLog()
    return conf


def _made(kind: Callable[[dict[str, Any]], C], cluster: ClusterConfig, conf: dict[str, Any]) -> C:
    """A client of ``kind``; librdkafka refusing its config (an unknown property, a bad
    value, a file it cannot read) is the user's configuration to fix: a ConfigError
    naming the cluster and the property or file. Making a client connects to nothing
    until it is used, so this is still before any connection."""
    cluster.check_files()
    try:
        return kind(conf)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        message = error.str() if isinstance(error, KafkaError) else str(exc)
        properties = cluster.as_librdkafka()
        raise ConfigError(refusal(f"cluster '{cluster.name}'", message, properties)) from None


def admin_client(cluster: ClusterConfig, trap: ErrorTrap) -> AdminClient:
    return _made(AdminClient, cluster, _base_config(cluster, trap, {}))


def producer(cluster: ClusterConfig, trap: ErrorTrap | None = None, **extra: Any) -> Producer:
    """A producer for this cluster; ``extra`` are librdkafka settings (e.g. acks)."""
    return _made(Producer, cluster, _base_config(cluster, trap or ErrorTrap(), extra))


def consumer(cluster: ClusterConfig, trap: ErrorTrap | None = None, **extra: Any) -> Consumer:
    """A consumer for this cluster; ``extra`` must include group.id when committing."""
    extra.setdefault("group.id", "kmigrate-reader")
    extra.setdefault("enable.auto.commit", False)
    return _made(Consumer, cluster, _base_config(cluster, trap or ErrorTrap(), extra))
