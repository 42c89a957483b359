"""Topics: listing, describing, creating (also like another cluster's), growing, deleting.

Creating and growing many topics is one request per batch (see ``request_batches``),
whatever the topic count; every topic's failure is reported, not only the first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, TypeVar

from confluent_kafka import TopicCollection
from confluent_kafka.admin import NewPartitions, NewTopic

from kmigrate.errors import ConflictError, KafkaOperationError, KMigrateError, TopicNotFoundError
from kmigrate.kafka.admin.brokers import Brokers
from kmigrate.kafka.admin.configs import Configs
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.admin.failures import NAMED, named, together
from kmigrate.kafka.topic_copy import configs_to_copy
from kmigrate.model.cluster import PartitionInfo, TopicInfo

T = TypeVar("T")
# KRaft's controller refuses a request that would write more than 10,000 metadata
# records ("Excessively large number of partitions per request",
# QuorumController.MAX_RECORDS_PER_USER_OP): a new topic is one record, each of its
# partitions and configs one more. Batches stay at half of that.
MAX_RECORDS_PER_REQUEST = 5_000
# A one-broker sandbox made the logs of new partitions at 100 to 450 a second (measured
# 2026-11-25 on 2 shared cores): waiting for new topics allows 20 ms per partition.
PARTITION_MAKING_S = 0.02
# Times a topic listing and its description are asked again when a topic listed was
# deleted before it was described.
_RACES = 3


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
        """The named topics that exist, described as ``describe_topics`` does. A topic
        deleted between the listing and the describing is not there: asked again."""
        if not names:
            return []
        for attempt in range(_RACES + 1):
            present = {t.name for t in self.list_topics(include_internal=True)}
            try:
                return self.describe_topics([n for n in names if n in present])
            except TopicNotFoundError:  # one was deleted meanwhile (the gateway deletes)
                if attempt == _RACES:
                    raise
        raise AssertionError("unreachable")  # the last attempt returned or raised

    def create_topic(
        self,
        name: str,
        partitions: int,
        *,
        replication_factor: int | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicInfo:
        """Create a topic and return it as the cluster now describes it (every
        partition with a leader)."""
        rf = self._checked_replication(replication_factor, f"topic '{name}'")
        self._create(
            [
                NewTopic(
                    name,
                    num_partitions=partitions,
                    replication_factor=rf,
                    config=dict(configs or {}),
                )
            ]
        )
        self._wait_ready({name: partitions})
        return self._described_once_known(name)

    def _described_once_known(self, name: str) -> TopicInfo:
        """``describe_topic`` of a topic just made ready: the broker librdkafka asks this
        time may not know it yet (each broker's metadata catches up on its own)."""
        deadline = time.monotonic() + self._conn.timeout
        pause = 0.05
        while True:
            try:
                return self.describe_topic(name)
            except TopicNotFoundError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

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

    def create_topics_like(
        self, sources: Sequence[TopicInfo], *, replication_factor: int | None = None
    ) -> list[TopicInfo]:
        """Create a copy of each of ``sources`` as ``create_topic_like`` does (same name,
        partition count and data configs, min.insync.replicas capped), in one CreateTopics
        request per batch of topics, and wait until every partition of every copy has a
        leader. Returns the copies in the order given, with the configs they were made with.

        Every topic is tried. If any failed, one error names each that failed and why; the
        others stay created (empty, shaped like their source).
        """
        if not sources:
            return []
        rf = self._checked_replication(replication_factor, f"{len(sources)} topic(s)")
        new = [
            NewTopic(
                s.name,
                num_partitions=s.partition_count,
                replication_factor=rf,
                config=configs_to_copy(s.configs, rf),
            )
            for s in sources
        ]
        self._create(new)
        ready = self._wait_ready({s.name: s.partition_count for s in sources})
        return [replace(ready[n.topic], configs=dict(n.config)) for n in new]

    def create_partitions(self, topic: str, total: int) -> TopicInfo:
        """Grow ``topic`` to ``total`` partitions, wait until each has a leader, and
        return the topic as the cluster now describes it."""
        self.grow_topics({topic: total})
        return self.describe_topic(topic)

    def grow_topics(self, totals: Mapping[str, int]) -> list[TopicInfo]:
        """Grow each topic to its total partition count, in one CreatePartitions request
        per batch, and wait until every partition has a leader; returns the topics in the
        order given (configs not included). Every failure is reported, in one error."""
        if not totals:
            return []
        conn = self._conn
        failures: list[tuple[str, KMigrateError]] = []
        for batch in request_batches(list(totals.items()), lambda item: item[1]):
            futures = conn.client.create_partitions(
                [NewPartitions(t, n) for t, n in batch],
                operation_timeout=conn.timeout,
                request_timeout=conn.timeout,
            )
            failures += _failed(conn, futures, "add partitions")
        if failures:
            raise together(
                failures,
                total=len(totals),
                noun="topic",
                outcome=f"could not be grown on cluster '{conn.cluster.name}'",
            )
        ready = self._wait_ready(totals)
        return [ready[t] for t in totals]

    def _checked_replication(self, replication_factor: int | None, subject: str) -> int:
        """The replication factor to create ``subject`` with (the cluster's default
        unless given); more than the cluster's brokers is refused."""
        rf = (
            replication_factor
            if replication_factor is not None
            else self._brokers.default_replication()
        )
        brokers = len(self._brokers.cluster_metadata().cluster.brokers)
        if rf > brokers:
            raise ConflictError(
                f"replication factor {rf} for {subject} exceeds the {brokers} broker(s) "
                f"of cluster '{self._conn.cluster.name}'; pass a smaller --replication-factor"
            )
        return rf

    def _create(self, new: Sequence[NewTopic]) -> None:
        """Send every topic, batch after batch; then report all that failed, at once."""
        conn = self._conn
        failures: list[tuple[str, KMigrateError]] = []
        for batch in request_batches(new, _records):
            futures = conn.client.create_topics(
                batch, operation_timeout=conn.timeout, request_timeout=conn.timeout
            )
            failures += _failed(conn, futures, "create topic")
        if failures:
            raise together(
                failures,
                total=len(new),
                noun="topic",
                outcome=f"could not be created on cluster '{conn.cluster.name}'",
            )

    def _wait_ready(self, wanted: Mapping[str, int]) -> dict[str, TopicInfo]:
        """Wait until every broker we ask knows each topic with its partition count
        and each partition has a leader: the controller answers create (and grow)
        before the brokers' metadata catches up. One request per look, for all topics
        not ready yet; configs not included.

        Waits up to the cluster's ``timeout_s`` plus PARTITION_MAKING_S per partition:
        a broker shows the topics of one request only after it made the logs of the
        requests before, thousands of partitions at a time.
        """
        conn = self._conn
        allowed = conn.timeout + PARTITION_MAKING_S * sum(wanted.values())
        deadline = time.monotonic() + allowed
        ready: dict[str, TopicInfo] = {}
        pause = 0.05
        while True:
            for topic in self._describe_known([n for n in wanted if n not in ready]):
                if topic.partition_count == wanted[topic.name] and all(
                    p.leader >= 0 for p in topic.partitions
                ):
                    ready[topic.name] = topic
            late = [n for n in wanted if n not in ready]
            if not late:
                return ready
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"{len(late)} topic(s) were created or grown on cluster "
                    f"'{conn.cluster.name}' but their partitions had no leader within "
                    f"{allowed:.0f}s: {named(late)}",
                    detail="\n".join(late) if len(late) > NAMED else None,
                )
            # Each look is a metadata request for every topic not ready: a broker busy
            # making thousands of logs is asked less and less often.
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _describe_known(self, names: list[str]) -> list[TopicInfo]:
        """The named topics this cluster already knows (configs not included)."""
        conn = self._conn
        futures = conn.client.describe_topics(
            TopicCollection(list(names)), request_timeout=conn.timeout
        )
        known = []
        for name, future in futures.items():
            try:
                known.append(_topic_info(conn.wait(future, "describe topic", topic=name), {}))
            except TopicNotFoundError:
                continue  # not known to the broker that answered yet
        return known

    def delete_topics(self, names: list[str]) -> None:
        """Delete the named topics in one request; every failure is reported, in one error."""
        if not names:
            return
        conn = self._conn
        futures = conn.client.delete_topics(
            list(names), operation_timeout=conn.timeout, request_timeout=conn.timeout
        )
        failures = _failed(conn, futures, "delete topic")
        if failures:
            raise together(
                failures,
                total=len(names),
                noun="topic",
                outcome=f"could not be deleted on cluster '{conn.cluster.name}'",
            )


def request_batches(
    items: Sequence[T], records: Callable[[T], int], limit: int = MAX_RECORDS_PER_REQUEST
) -> list[list[T]]:
    """``items`` in consecutive batches, in order, each of at most ``limit`` records
    (``records`` of an item) unless one item alone has more: it goes alone."""
    batches: list[list[T]] = []
    size = 0
    for item in items:
        weight = records(item)
        if not batches or size + weight > limit:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += weight
    return batches


def _records(topic: NewTopic) -> int:
    """The metadata records KRaft writes for a new topic: the topic, its partitions,
    its configs."""
    return 1 + int(topic.num_partitions) + len(topic.config)


def _failed(
    conn: AdminConnection, futures: Mapping[str, Future[Any]], action: str
) -> list[tuple[str, KMigrateError]]:
    """Each topic whose future failed, with its error; waits for all of them."""
    failures = []
    for topic, future in futures.items():
        try:
            conn.wait(future, action, topic=topic)
        except KMigrateError as exc:
            failures.append((topic, exc))
    return failures


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
