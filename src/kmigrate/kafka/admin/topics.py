"""Topics: listing, describing, creating (also like another cluster's), growing, deleting."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import TopicCollection
from confluent_kafka.admin import NewPartitions, NewTopic

from kmigrate.errors import ConflictError, KafkaOperationError, TopicNotFoundError
from kmigrate.kafka.admin.brokers import Brokers
from kmigrate.kafka.admin.configs import Configs
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.topic_copy import configs_to_copy
from kmigrate.model.cluster import PartitionInfo, TopicInfo


class Topics:
    """The cluster's topics and their partition placement."""

    def __init__(self, conn: AdminConnection, brokers: Brokers, configs: Configs) -> None:
        self._conn = conn
        self._brokers = brokers
        self._configs = configs

    def list_topics(self, *, include_internal: bool = False) -> list[TopicInfo]:
        """All topics with their partition placement (configs not included)."""
        metadata = self._conn.metadata()
        topics = []
        for name, meta in sorted(metadata.topics.items()):
            if name.startswith("__") and not include_internal:
                continue
            partitions = tuple(
                sorted(
                    (
                        PartitionInfo(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
                        for p in meta.partitions.values()
                    ),
                    key=lambda p: p.partition,
                )
            )
            topics.append(TopicInfo(name, partitions, internal=name.startswith("__")))
        return topics

    def describe_topic(self, name: str) -> TopicInfo:
        """One topic: partitions, leaders, replicas, ISR and non-default configs."""
        return self.describe_topics([name])[0]

    def describe_topics(self, names: list[str]) -> list[TopicInfo]:
        """The named topics, in the order given; a missing one raises TopicNotFoundError."""
        if not names:
            return []
        conn = self._conn
        futures = conn.client.describe_topics(
            TopicCollection(list(names)), request_timeout=conn.timeout
        )
        described = {n: conn.wait(f, "describe topic", topic=n) for n, f in futures.items()}
        configs = self._configs.topic_configs(names)
        return [_topic_info(described[n], configs[n]) for n in names]

    def describe_topics_if_present(self, names: list[str]) -> list[TopicInfo]:
        """The named topics that exist, described as ``describe_topics`` does."""
        present = {t.name for t in self.list_topics(include_internal=True)}
        return self.describe_topics([n for n in names if n in present])

    def create_topic(
        self,
        name: str,
        partitions: int,
        *,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicInfo:
        """Create a topic and return it as the cluster now describes it."""
        conn = self._conn
        rf = (
            replication_factor
            if replication_factor is not None
            else self._brokers.default_replication()
        )
        brokers = len(self._brokers.cluster_metadata().cluster.brokers)
        if rf > brokers:
            raise ConflictError(
                f"replication factor {rf} for topic '{name}' exceeds the {brokers} broker(s) "
                f"of cluster '{conn.cluster.name}'; pass a smaller --replication-factor"
            )
        new = NewTopic(
            name, num_partitions=partitions, replication_factor=rf, config=dict(configs or {})
        )
        futures = conn.client.create_topics(
            [new], operation_timeout=conn.timeout, request_timeout=conn.timeout
        )
        conn.wait_all(futures, "create topic", topic=name)
        return self._wait_topic_ready(name, partitions)

    def _wait_topic_ready(self, name: str, partitions: int) -> TopicInfo:
        """Wait until every broker we ask knows the new topic and each partition has a
        leader: the controller answers create before the brokers' metadata catches up."""
        deadline = time.monotonic() + self._conn.timeout
        while True:
            try:
                topic = self.describe_topic(name)
                if topic.partition_count == partitions and all(
                    p.leader >= 0 for p in topic.partitions
                ):
                    return topic
            except TopicNotFoundError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"topic '{name}' was created on cluster '{self._conn.cluster.name}' but its "
                    f"partitions had no leader within {self._conn.timeout:g}s"
                )
            time.sleep(0.1)

    def create_topic_like(
        self,
        source: TopicInfo,
        *,
        name: str | None = None,
        replication_factor: int | None = None,
        only_configs: Iterable[str] | None = None,
        config_overrides: Mapping[str, str] | None = None,
    ) -> TopicInfo:
        """Create a topic with ``source``'s partition count and data configs.

        The replication factor is this cluster's default unless given;
        min.insync.replicas is capped so the copy stays writable.
        """
        rf = (
            replication_factor
            if replication_factor is not None
            else self._brokers.default_replication()
        )
        configs = configs_to_copy(source.configs, rf, only=only_configs, overrides=config_overrides)
        return self.create_topic(
            name or source.name, source.partition_count, replication_factor=rf, configs=configs
        )

    def create_partitions(self, topic: str, total: int) -> TopicInfo:
        """Grow ``topic`` to ``total`` partitions and wait until each has a leader."""
        futures = self._conn.client.create_partitions(
            [NewPartitions(topic, total)],
            operation_timeout=self._conn.timeout,
            request_timeout=self._conn.timeout,
        )
        self._conn.wait_all(futures, "add partitions", topic=topic)
        return self._wait_topic_ready(topic, total)

    def delete_topics(self, names: list[str]) -> None:
        if names:
            conn = self._conn
            futures = conn.client.delete_topics(
                list(names), operation_timeout=conn.timeout, request_timeout=conn.timeout
            )
            for topic, future in futures.items():
                conn.wait(future, "delete topic", topic=topic)


def _topic_info(desc: Any, configs: dict[str, str]) -> TopicInfo:
    partitions = tuple(
        sorted(
            (
                PartitionInfo(
                    p.id,
                    p.leader.id if p.leader is not None else -1,
                    tuple(n.id for n in p.replicas),
                    tuple(n.id for n in p.isr),
                )
                for p in desc.partitions
            ),
            key=lambda p: p.partition,
        )
    )
    return TopicInfo(desc.name, partitions, configs, internal=bool(desc.is_internal))
