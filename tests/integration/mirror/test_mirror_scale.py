"""A thousand partitions: a mirror batch costs a constant number of round trips.

One link over 100 topics of 10 partitions, driven in process on a real SparkContext
(local[2]): every batch makes a fixed number of ListOffsets requests to each cluster
and one store transaction, and runs one Spark task per slot, whatever the partition
count; partitions with nothing new cost nothing. The copy is exact: every target
partition holds the source's records in order, and the offset map says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from harness.helpers import unique
from kmigrate.config import ClusterConfig, SparkConfig
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.batch import MirrorContext, run_batch
from kmigrate.mirror.ranges import CopySettings
from kmigrate.mirror.topology import sync_topology
from kmigrate.model.links import Link
from kmigrate.store import open_store
from kmigrate.store.links import save_link
from tests.integration.bulk_topics import create_ready, wait_ready
from tests.integration.conftest import Clusters

TOPICS, PARTITIONS, RECORDS = 100, 10, 3


class Counted:
    """Counts calls of some methods of a real object (the calls still happen)."""

    def __init__(self, target: Any, names: list[str]) -> None:
        self.calls = dict.fromkeys(names, 0)
        for name in names:
            setattr(target, name, self._counting(name, getattr(target, name)))

    def _counting(self, name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)

        return call

    def take(self) -> dict[str, int]:
        taken = dict(self.calls)
        self.calls = dict.fromkeys(self.calls, 0)
        return taken


@pytest.fixture(scope="module")
def estate(clusters: Clusters) -> Iterator[list[str]]:
    prefix = unique("scale")
    names = [f"{prefix}.{i:03d}" for i in range(TOPICS)]
    try:
        create_ready(clusters.source, names, PARTITIONS, {})
        producer = Producer({"bootstrap.servers": clusters.source.bootstrap_servers})
        for name in names:
            for p in range(PARTITIONS):
                for i in range(RECORDS):
                    key = b"%s/%d/%d" % (name.encode(), p, i)
                    producer.produce(name, key, b"%d" % i, partition=p)
        assert producer.flush(120) == 0
        yield names
    finally:
        for cluster in (clusters.source, clusters.target):
            with ClusterAdmin(cluster) as admin:
                admin.delete_topics([n for n in names if n in _existing(admin)])


def test_a_batch_over_a_thousand_partitions_costs_constant_round_trips(
    clusters: Clusters, estate: list[str], tmp_path: Path
) -> None:
    from kmigrate.spark.session import build_context

    store = open_store(f"sqlite:///{tmp_path / 'kmigrate.db'}", None)
    prefix = estate[0].rsplit(".", 1)[0]
    link = save_link(store, Link(unique("scale"), "source", "target", f"{prefix}\\..*"))
    spark = build_context(SparkConfig(master="local[2]"), "kmigrate-scale-test")
    with ClusterAdmin(clusters.source) as source, ClusterAdmin(clusters.target) as target:
        assignment = sync_topology(store, link, source, target, lambda _m: None)
        pairs = assignment.pairs()
        assert len(pairs) == TOPICS * PARTITIONS
        # A running mirror waits this out (the broker is still making the new logs).
        wait_ready(clusters.target, estate, PARTITIONS)
        ctx = MirrorContext(
            store,
            link,
            source,
            target,
            CopySettings(clusters.source.as_librdkafka(), clusters.target.as_librdkafka()),
            allow_gaps=False,
        )
        ctx.reload()
        lists = {
            side: Counted(admin._conn.client, ["list_offsets"])
            for side, admin in (("source", source), ("target", target))
        }
        transactions = Counted(store, ["transaction"])
        try:
            copied = run_batch(ctx, lambda: spark, pairs)
            first = {side: c.take()["list_offsets"] for side, c in lists.items()}
            first_writes = transactions.take()["transaction"]
            idle = run_batch(ctx, lambda: spark, pairs)
            again = {side: c.take()["list_offsets"] for side, c in lists.items()}
            idle_writes = transactions.take()["transaction"]
        finally:
            spark.stop()
    assert copied == TOPICS * PARTITIONS * RECORDS
    # Source: stable ends, log starts (retention check); target: ends. Not one per partition.
    assert first["source"] <= 3 and first["target"] <= 2, first
    assert first_writes == 1, "a batch's runs are stored in one transaction"
    assert idle == 0 and idle_writes == 0, "partitions with nothing new cost nothing"
    assert again == {"source": 1, "target": 0}, again
    _assert_exact(clusters, estate)


def test_a_task_cut_by_its_byte_limit_goes_on_where_it_stopped_reading(
    clusters: Clusters, tmp_path: Path
) -> None:
    """Each task may read 2 KB per batch, so batches end inside ranges; the next batch
    goes on where reading stopped and the copy ends whole and exact, on Spark and in the
    driver alike. (A range cut short was once recorded as read to its end, and its rest
    was never copied.)"""
    from kmigrate.spark.session import build_context

    prefix = unique("cut")
    names, partitions, records = [f"{prefix}.0", f"{prefix}.1"], 4, 50
    create_ready(clusters.source, names, partitions, {})
    producer = Producer({"bootstrap.servers": clusters.source.bootstrap_servers})
    for name in names:
        for p in range(partitions):
            for i in range(records):
                producer.produce(name, b"%d/%d" % (p, i), b"v" * 100, partition=p)
    assert producer.flush(60) == 0
    store = open_store(f"sqlite:///{tmp_path / 'kmigrate.db'}", None)
    link = save_link(store, Link(unique("cut"), "source", "target", f"{prefix}\\..*"))
    spark = build_context(SparkConfig(master="local[2]"), "kmigrate-cut-test")
    settings = CopySettings(
        clusters.source.as_librdkafka(), clusters.target.as_librdkafka(), max_bytes=2_000
    )
    copied: list[int] = []
    try:
        with ClusterAdmin(clusters.source) as source, ClusterAdmin(clusters.target) as target:
            pairs = sync_topology(store, link, source, target, lambda _m: None).pairs()
            wait_ready(clusters.target, names, partitions)
            ctx = MirrorContext(store, link, source, target, settings, allow_gaps=False)
            ctx.reload()
            while not copied or (copied[-1] and len(copied) < 100):
                # every other batch copied by the driver (as small batches are)
                ctx.driver_offsets = 10**9 if len(copied) % 2 else 0
                copied.append(run_batch(ctx, lambda: spark, pairs))
        wanted = _read_all(clusters.source, names, partitions)
        found = _read_all(clusters.target, names, partitions)
    finally:
        spark.stop()
        for cluster in (clusters.source, clusters.target):
            with ClusterAdmin(cluster) as admin:
                admin.delete_topics([n for n in names if n in _existing(admin)])
    total = len(names) * partitions * records
    assert copied[0] < total, f"the limit did not cut the first batch: {copied}"
    assert sum(copied) == total, copied
    assert found == wanted


def _existing(admin: ClusterAdmin) -> set[str]:
    return {t.name for t in admin.list_topics()}


def _assert_exact(clusters: Clusters, names: list[str]) -> None:
    source, target = _read_all(clusters.source, names), _read_all(clusters.target, names)
    assert len(source) == TOPICS * PARTITIONS
    assert target == source


def _read_all(
    cluster: ClusterConfig, names: list[str], partitions: int = PARTITIONS
) -> dict[tuple[str, int], list[Any]]:
    """Every record of every partition, in offset order, with one plain consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": unique("scale-check"),
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    waiting = {(n, p) for n in names for p in range(partitions)}
    consumer.assign([TopicPartition(n, p, 0) for n, p in waiting])
    found: dict[tuple[str, int], list[Any]] = {tp: [] for tp in waiting}
    try:
        while waiting:
            message = consumer.poll(30)
            assert message is not None, f"{len(waiting)} partitions not read to their end"
            tp = (message.topic(), message.partition())
            if message.error() is None:
                found[tp].append((message.offset(), message.key(), message.value()))
            elif message.error().code() == KafkaError._PARTITION_EOF:
                waiting.discard(tp)
            else:
                raise AssertionError(message.error().str())
    finally:
        consumer.close()
    return found
