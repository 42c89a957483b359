"""A cluster's brokers, controller and id."""

from __future__ import annotations

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import ClusterInfo


def cluster_info(admin: ClusterAdmin) -> ClusterInfo:
    """Brokers (with racks), controller and cluster id."""
    return admin.describe_cluster()
