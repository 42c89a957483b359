"""The cluster itself: its brokers, controller and broker configuration."""

from __future__ import annotations

from typing import Any, NamedTuple

from confluent_kafka.admin import ConfigResource, ResourceType

from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.model.cluster import Broker, ClusterInfo


class MetadataAnswer(NamedTuple):
    """The cluster as one broker knows it (racks unknown: None), and which broker that is."""

    answered_by: str  # "host:port" of the broker whose answer this is
    cluster: ClusterInfo


class Brokers:
    """Who the cluster's brokers are and how they are configured."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def describe_cluster(self) -> ClusterInfo:
        """Brokers (with racks), controller and cluster id. Asked by the connection's
        child process (``isolated``): librdkafka's DescribeCluster can abort the process."""
        found = self._conn.isolated.call("describe_cluster", "describe cluster")
        brokers = sorted(
            (
                Broker(int(i), host, int(port), rack or None)
                for i, host, port, rack in found["brokers"]
            ),
            key=lambda b: b.node_id,
        )
        return ClusterInfo(found["cluster_id"], found["controller"], tuple(brokers))

    def cluster_metadata(self) -> MetadataAnswer:
        """Brokers (racks None), controller and cluster id from a Metadata request, in
        this process: an answer without brokers (a broker starting) is an error here."""
        metadata = self._conn.metadata()
        brokers = sorted(
            (Broker(b.id, b.host, b.port, None) for b in metadata.brokers.values()),
            key=lambda b: b.node_id,
        )
        controller = metadata.controller_id if metadata.controller_id >= 0 else None
        info = ClusterInfo(metadata.cluster_id, controller, tuple(brokers))
        # orig_broker_name: "[proto://]host:port/<id or 'bootstrap'>"
        address = metadata.orig_broker_name.rsplit("/", 1)[0].rpartition("://")[2]
        return MetadataAnswer(address, info)

    def broker_config(self, node_id: int | None = None) -> dict[str, str]:
        """One broker's effective configuration (the first broker's by default)."""
        if node_id is None:
            node_id = self.cluster_metadata().cluster.brokers[0].node_id
        entries = self._entries(node_id)
        return {name: e.value for name, e in entries.items() if e.value is not None}

    def hidden_broker_configs(self, node_id: int) -> set[str]:
        """The names a broker says it sets but does not show: passwords, and settings
        Kafka does not know (an authorizer's), which it treats as secret. A password
        left unset is listed by Kafka too (sensitive, its default): not here."""
        entries = self._entries(node_id)
        return {
            name
            for name, e in entries.items()
            if e.value is None and e.is_sensitive and not e.is_default
        }

    def _entries(self, node_id: int) -> dict[str, Any]:
        """DescribeConfigs of one broker; a client that cannot reach the cluster is
        renewed and asked again (after a broker restart librdkafka may never refresh
        the metadata of the client that knew it before)."""
        resource = ConfigResource(ResourceType.BROKER, str(node_id))

        def ask() -> dict[str, Any]:
            futures = self._conn.client.describe_configs(
                [resource], request_timeout=self._conn.timeout
            )
            (entries,) = self._conn.wait_all(futures, "describe broker configs").values()
            return dict(entries)

        return self._conn.briefly(ask)

    def default_replication(self) -> int:
        """The cluster's default.replication.factor, bounded by its broker count."""
        brokers = self.cluster_metadata().cluster.brokers
        config = self.broker_config(brokers[0].node_id)
        return max(1, min(int(config.get("default.replication.factor", "1")), len(brokers)))
