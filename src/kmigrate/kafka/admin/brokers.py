"""The cluster itself: its brokers, controller and broker configuration."""

from __future__ import annotations

from confluent_kafka.admin import ConfigResource, ResourceType

from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.model.cluster import Broker, ClusterInfo


class Brokers:
    """Who the cluster's brokers are and how they are configured."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def describe_cluster(self) -> ClusterInfo:
        """Brokers (with racks), controller and cluster id."""
        conn = self._conn
        result = conn.wait(
            conn.client.describe_cluster(request_timeout=conn.timeout), "describe cluster"
        )
        brokers = tuple(
            sorted(
                (Broker(n.id, n.host, n.port, n.rack or None) for n in result.nodes),
                key=lambda b: b.node_id,
            )
        )
        controller = result.controller.id if result.controller is not None else None
        return ClusterInfo(result.cluster_id, controller, brokers)

    def broker_config(self, node_id: int | None = None) -> dict[str, str]:
        """One broker's effective configuration (the first broker's by default)."""
        if node_id is None:
            node_id = self.describe_cluster().brokers[0].node_id
        resource = ConfigResource(ResourceType.BROKER, str(node_id))
        futures = self._conn.client.describe_configs([resource], request_timeout=self._conn.timeout)
        (entries,) = self._conn.wait_all(futures, "describe broker configs").values()
        return {name: e.value for name, e in entries.items() if e.value is not None}

    def hidden_broker_configs(self, node_id: int) -> set[str]:
        """The names a broker says it sets but does not show: passwords, and settings
        Kafka does not know (an authorizer's), which it treats as secret."""
        resource = ConfigResource(ResourceType.BROKER, str(node_id))
        futures = self._conn.client.describe_configs([resource], request_timeout=self._conn.timeout)
        (entries,) = self._conn.wait_all(futures, "describe broker configs").values()
        return {name for name, e in entries.items() if e.value is None and e.is_sensitive}

    def default_replication(self) -> int:
        """The cluster's default.replication.factor, bounded by its broker count."""
        brokers = self.describe_cluster().brokers
        config = self.broker_config(brokers[0].node_id)
        return max(1, min(int(config.get("default.replication.factor", "1")), len(brokers)))
