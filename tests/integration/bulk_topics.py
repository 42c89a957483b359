"""Many topics for the scale tests, made in one request and waited for."""

from __future__ import annotations

from harness.helpers import wait_for
from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterUnavailableError, TopicNotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import PartitionInfo, TopicInfo


def create_ready(
    cluster: ClusterConfig, names: list[str], partitions: int, configs: dict[str, str]
) -> None:
    """Empty topics of ``partitions`` partitions, in one request, once every partition
    answers ListOffsets (its leader made its log; the metadata shows topics earlier)."""
    layout = tuple(PartitionInfo(p, -1, (), ()) for p in range(partitions))
    with ClusterAdmin(cluster) as admin:
        admin.create_topics_like([TopicInfo(n, layout, configs) for n in names])
    wait_ready(cluster, names, partitions)


def wait_ready(cluster: ClusterConfig, names: list[str], partitions: int) -> None:
    every = [(n, p) for n in names for p in range(partitions)]

    def answered() -> bool:
        with ClusterAdmin(cluster) as admin:
            try:
                return len(admin.partition_offsets(every, "latest")) == len(every)
            except (ClusterUnavailableError, TopicNotFoundError):
                return False

    wait_for(answered, timeout=120, message=f"{len(names)} topics ready on {cluster.name}")
