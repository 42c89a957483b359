"""What the principal may do, as Kafka reports it ("authorized operations" of
DescribeCluster, DescribeTopics and DescribeGroups): upper-case ACL operation names
(READ, WRITE, CREATE, DESCRIBE, ALTER_CONFIGS, ...) for the cluster, each topic and each
group. Nothing is changed or validated; nothing but describing is asked.

confluent-kafka reports an empty set as None; asked for it, kmigrate reads None as
"nothing allowed". A topic or group the principal may not even describe is allowed
nothing as well."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, TopicCollection

from kmigrate.kafka.admin.brokers import Brokers
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.errors import kafka_error_of
from kmigrate.model.cluster import Broker, ClusterInfo

_DENIED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}
_GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.GROUP_ID_NOT_FOUND}

Operations = frozenset[str]


def _names(operations: Iterable[Any] | None) -> Operations:
    return frozenset(str(getattr(op, "name", op)).upper() for op in operations or ())


class Authorized:
    """The authorized operations of the cluster, its topics and its groups."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def cluster_operations(self) -> tuple[ClusterInfo, Operations]:
        """The cluster (brokers, controller, id) and what the principal may do on it.
        Asked by the connection's child process, as ``Brokers.describe_cluster``."""
        found = self._conn.isolated.call("describe_cluster", "describe cluster", authorized=True)
        brokers = sorted(
            (Broker(int(i), h, int(p), r or None) for i, h, p, r in found["brokers"]),
            key=lambda b: b.node_id,
        )
        info = ClusterInfo(found["cluster_id"], found["controller"], tuple(brokers))
        return info, _names(found.get("authorized_operations"))

    def topic_operations(self, names: list[str]) -> dict[str, Operations]:
        """Each named topic's authorized operations (a topic deleted meanwhile: left out)."""
        if not names:
            return {}
        conn = self._conn
        futures = conn.client.describe_topics(
            TopicCollection(list(names)),
            request_timeout=conn.timeout,
            include_authorized_operations=True,
        )
        return self._each(futures, "describe topic authorized operations")

    def group_operations(self, group_ids: list[str]) -> dict[str, Operations]:
        """Each named group's authorized operations (a group gone meanwhile: left out)."""
        if not group_ids:
            return {}
        conn = self._conn
        futures = conn.client.describe_consumer_groups(
            list(group_ids), request_timeout=conn.timeout, include_authorized_operations=True
        )
        return self._each(futures, "describe group authorized operations")

    def _each(self, futures: dict[str, Any], action: str) -> dict[str, Operations]:
        found: dict[str, Operations] = {}
        for name, future in futures.items():
            try:
                described = future.result(timeout=self._conn.timeout + 5)
            except Exception as exc:
                error = kafka_error_of(exc)
                if error is not None and error.code() in _DENIED:
                    found[name] = frozenset()
                    continue
                if error is not None and error.code() in _GONE:
                    continue
                raise self._conn.translate(exc, action) from exc
            found[name] = _names(described.authorized_operations)
        return found


def broker_facts(brokers: Brokers, node_id: int) -> dict[str, str]:
    """The broker settings that tell its metadata mode and version (empty values left
    out): process.roles, zookeeper.connect, the migration flag, inter.broker.protocol.version."""
    config = brokers.broker_config(node_id)
    keys = (
        "process.roles",
        "zookeeper.connect",
        "zookeeper.metadata.migration.enable",
        "inter.broker.protocol.version",
    )
    return {k: config[k] for k in keys if config.get(k)}
