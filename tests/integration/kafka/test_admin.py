"""The admin layer against real brokers: topics, configs, offsets, groups."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from harness.helpers import unique, wait_for
from kmigrate.errors import GroupActiveError, TopicExistsError, TopicNotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters


def test_create_topic_like_copies_partitions_and_data_configs(
    source_admin: ClusterAdmin, target_admin: ClusterAdmin
) -> None:
    name = unique("like")
    configs = {
        "cleanup.policy": "compact",
        "retention.ms": "3600000",
        "max.message.bytes": "2097152",
        "message.timestamp.type": "LogAppendTime",
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "true",
    }
    original = source_admin.create_topic(name, 5, configs=configs)
    assert original.configs == configs

    copy = target_admin.create_topic_like(source_admin.describe_topic(name))

    read_back = target_admin.describe_topic(name)
    assert read_back == copy
    assert read_back.partition_count == 5
    assert read_back.replication_factor == 1
    # Data configs travel; min.insync.replicas is capped at the target's replication
    # factor (1 broker) so acks=all writes still succeed; placement configs stay behind.
    assert read_back.configs == {
        "cleanup.policy": "compact",
        "retention.ms": "3600000",
        "max.message.bytes": "2097152",
        "message.timestamp.type": "LogAppendTime",
        "min.insync.replicas": "1",
    }
    produce(target_admin.cluster, name, [Record(b"k", b"v", partition=4)])


def test_create_topic_like_refuses_an_existing_topic(
    source_admin: ClusterAdmin, target_admin: ClusterAdmin
) -> None:
    name = unique("exists")
    source_admin.create_topic(name, 2)
    target_admin.create_topic(name, 3)
    with pytest.raises(TopicExistsError, match=name):
        target_admin.create_topic_like(source_admin.describe_topic(name))
    assert target_admin.describe_topic(name).partition_count == 3


def test_describe_missing_topic_names_it(source_admin: ClusterAdmin) -> None:
    with pytest.raises(TopicNotFoundError, match="no-such-topic"):
        source_admin.describe_topic("no-such-topic")
    with pytest.raises(TopicNotFoundError, match="no-such-topic"):
        source_admin.watermarks("no-such-topic")


def test_watermarks_and_delete_records(source_admin: ClusterAdmin) -> None:
    name = unique("marks")
    source_admin.create_topic(name, 2)
    produce(
        source_admin.cluster, name, [Record(None, b"%d" % i, partition=i % 2) for i in range(20)]
    )
    assert [(w.partition, w.low, w.high) for w in source_admin.watermarks(name)] == [
        (0, 0, 10),
        (1, 0, 10),
    ]

    after = source_admin.delete_records(name, {0: 4})

    assert [(w.partition, w.low, w.high) for w in after] == [(0, 4, 10)]
    remaining = read_partition(source_admin.cluster, name, 0, 0, 10)
    assert [r.offset for r in remaining] == list(range(4, 10))


def test_offsets_for_timestamp_find_first_record_at_or_after(source_admin: ClusterAdmin) -> None:
    name = unique("times")
    source_admin.create_topic(name, 2)
    base = 1_700_000_000_000
    produce(
        source_admin.cluster,
        name,
        [Record(None, b"a%d" % i, partition=0, timestamp=base + 1000 * i) for i in range(5)]
        + [Record(None, b"b", partition=1, timestamp=base)],
    )

    found = source_admin.offsets_for_timestamp(name, base + 2500)

    # Partition 0: records at +0,+1000,...,+4000; the first at or after +2500 is offset 3.
    # Partition 1: nothing that new, so the log end (a seek there reads only newer records).
    assert found == [
        TopicPartitionOffset(name, 0, 3, base + 3000),
        TopicPartitionOffset(name, 1, 1, None),
    ]
    assert source_admin.offsets_for_timestamp(name, base)[0].offset == 0


def _consumer(clusters: Clusters, group: str) -> Consumer:
    conf = clusters.source.as_librdkafka()
    conf.update({"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    return Consumer(conf)


def _consume(consumer: Consumer, count: int) -> list[int]:
    offsets: list[int] = []

    def more() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            offsets.append(message.offset())
        return len(offsets) >= count

    wait_for(more, timeout=30, message=f"consumer to receive {count} records", interval=0)
    return offsets


def test_describe_and_alter_group_offsets_with_a_real_consumer(
    clusters: Clusters, source_admin: ClusterAdmin
) -> None:
    topic, group = unique("grp-topic"), unique("grp")
    source_admin.create_topic(topic, 1)
    produce(clusters.source, topic, [Record(None, b"%d" % i, partition=0) for i in range(10)])
    consumer = _consumer(clusters, group)
    try:
        consumer.subscribe([topic])
        assert _consume(consumer, 6) == list(range(6))
        consumer.commit(asynchronous=False)

        live = source_admin.describe_group(group)
        assert live.state == "STABLE"
        assert len(live.members) == 1
        assert live.members[0].assignment == ((topic, 0),)
        assert [(o.topic, o.partition, o.committed, o.log_end, o.lag) for o in live.offsets] == [
            (topic, 0, 6, 10, 4)
        ]
        with pytest.raises(GroupActiveError, match=group):
            source_admin.alter_group_offsets(group, [TopicPartitionOffset(topic, 0, 2)])
    finally:
        consumer.close()

    wait_for(
        lambda: source_admin.describe_group(group).state == "EMPTY",
        timeout=30,
        message=f"group {group} to become empty after its consumer left",
    )
    source_admin.alter_group_offsets(group, [TopicPartitionOffset(topic, 0, 2)])

    assert [o.committed for o in source_admin.describe_group(group).offsets] == [2]
    resumed = _consumer(clusters, group)
    try:
        resumed.subscribe([topic])
        assert _consume(resumed, 8) == list(range(2, 10))
    finally:
        resumed.close()
    assert group in {g.group_id for g in source_admin.list_groups()}


def test_record_round_trip_keeps_headers_timestamps_and_nulls(
    clusters: Clusters, source_admin: ClusterAdmin
) -> None:
    name = unique("records")
    source_admin.create_topic(name, 1)
    sent = [
        Record(None, None, (), 1_600_000_000_000, 0),
        Record(b"k", b"\x00\xff", (("h", b"1"), ("h", None), ("b", b"\x00")), 1_600_000_000_001, 0),
    ]
    produced = produce(clusters.source, name, sent)
    got = read_partition(clusters.source, name, 0, 0, 2)
    assert got == produced
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (s.key, s.value, s.headers, s.timestamp) for s in sent
    ]
