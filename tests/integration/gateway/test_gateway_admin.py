"""Admin tools and admin clients through the gateway: Apache Kafka 4.3.1's own Java
tools (kafka-topics, kafka-configs, kafka-consumer-groups, kafka-delete-records) and
confluent-kafka's AdminClient. What they print names only gateway instances, configs
are the backend's, changes land on the backend that holds the topic, and a topic
created through the gateway lands on the default route's cluster and is routed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from harness.gateway import Gateway
from harness.helpers import run_cli, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from tests.integration.conftest import Clusters
from tests.integration.gateway.verifiable import java_tool, java_tools, names_only_gateway

RECORDS = 30  # 10 per partition
TOOLS = "org.apache.kafka.tools"


def _route(gw: Gateway, *args: str) -> None:
    done = run_cli("gateway", "route", *args, config=str(gw.config))
    assert done.code == 0, done.stderr


@pytest.fixture(scope="module")
def default_route(gateway: Gateway) -> Iterator[str]:
    """New topics go to `source` while these tests run (no default route after)."""
    _route(gateway, "default", "--cluster", "source")
    try:
        yield "source"
    finally:
        _route(gateway, "default", "--clear")


@pytest.fixture(scope="module")
def used_topic(clusters: Clusters, gateway: Gateway) -> tuple[str, str]:
    """A topic on `source`, routed there, written through the gateway and read by a
    group that committed everything: (topic, group)."""
    topic, group = unique("adm"), unique("adm-group")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 3)
    _route(gateway, "set", "--topic", topic, "--cluster", "source")
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "enable.idempotence": True})
    for n in range(RECORDS):
        producer.produce(topic, f"v{n}".encode(), partition=n % 3)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    seen: list[bytes] = []

    def read_all() -> bool:
        seen.extend(m.value() for m in consumer.consume(100, 0.5) if m.error() is None)
        return len(seen) >= RECORDS

    try:
        wait_for(read_all, timeout=60, message=f"{RECORDS} records read through the gateway")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return topic, group


def test_kafka_tools_describe_alter_and_reset_through_the_gateway(
    clusters: Clusters, gateway: Gateway, used_topic: tuple[str, str]
) -> None:
    topic, group = used_topic
    describe, configs, groups, listed, producers = java_tools(
        gateway,
        (f"{TOOLS}.TopicCommand", "--describe", "--topic", topic),
        ("kafka.admin.ConfigCommand", "--describe", "--entity-type", "brokers",
         "--entity-name", "1", "--all"),
        (f"{TOOLS}.consumer.group.ConsumerGroupCommand", "--describe", "--group", group),
        (f"{TOOLS}.consumer.group.ConsumerGroupCommand", "--list"),
        (f"{TOOLS}.TransactionsCommand", "describe-producers", "--topic", topic,
         "--partition", "1"),
    )  # fmt: skip
    for code, said in (describe, configs, groups, listed, producers):
        assert code == 0, said[-2000:]
        names_only_gateway(said, gateway, clusters)
    assert "does not support" not in describe[1]
    assert f"Topic: {topic}\tTopicId:" in describe[1] and "PartitionCount: 3" in describe[1]
    assert f"advertised.listeners=PLAINTEXT://{gateway.instance(1)}" in configs[1]
    assert "node.id=1 " in configs[1] and "controller.quorum" not in configs[1]
    lags = re.findall(rf"{group}\s+{topic}\s+\d\s+(\d+)\s+(\d+)\s+(\d+)", groups[1])
    assert lags == [("10", "10", "0")] * 3, groups[1]
    assert group in listed[1].split()
    rows = [[c.strip() for c in line.split("\t")] for line in producers[1].splitlines()]
    assert [r[3] for r in rows if r[0].isdigit()] == ["9"], producers[1]  # 10 records, 1 producer

    # Alter a topic config: it is the backend's; reset the group; delete records.
    code, said = java_tool(gateway, "kafka.admin.ConfigCommand", "--alter",
                           "--entity-type", "topics", "--entity-name", topic,
                           "--add-config", "retention.ms=7200000")  # fmt: skip
    assert code == 0 and f"Completed updating config for topic {topic}" in said, said[-2000:]
    (described, reset, deleted) = java_tools(
        gateway,
        ("kafka.admin.ConfigCommand", "--describe", "--entity-type", "topics",
         "--entity-name", topic),
        (f"{TOOLS}.consumer.group.ConsumerGroupCommand", "--reset-offsets", "--group", group,
         "--topic", topic, "--to-offset", "6", "--execute"),
        (f"{TOOLS}.DeleteRecordsCommand", "--offset-json-file", _delete_file(gateway, topic)),
    )  # fmt: skip
    for code, said in (described, reset, deleted):
        assert code == 0, said[-2000:]
    assert "retention.ms=7200000" in described[1]
    assert f"partition: {topic}-0\tlow_watermark: 5" in deleted[1]
    with ClusterAdmin(clusters.source) as admin:
        assert admin.topic_configs([topic])[topic]["retention.ms"] == "7200000"
        assert [w.low for w in admin.watermarks(topic)] == [5, 0, 0]
    with ClusterAdmin(clusters.target) as home:
        committed = {c.partition: c.committed for c in home.committed_offsets(group)}
    assert committed == {0: 6, 1: 6, 2: 6}


def _delete_file(gw: Gateway, topic: str) -> str:
    path = gw.logs / f"{topic}-delete.json"
    path.write_text(json.dumps(
        {"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 5}]}
    ))  # fmt: skip
    return str(path)


def test_kafka_topics_creates_on_the_default_route_grows_and_deletes(
    clusters: Clusters, gateway: Gateway
) -> None:
    topic = unique("adm-new")
    code, said = java_tool(gateway, f"{TOOLS}.TopicCommand", "--create", "--topic", topic,
                       "--partitions", "2")  # fmt: skip
    assert code != 0 and "PolicyViolationException: no default route" in said, said[-2000:]
    assert "kmigrate gateway route default --cluster" in said

    _route(gateway, "default", "--cluster", "source")
    try:
        code, said = java_tool(gateway, f"{TOOLS}.TopicCommand", "--create", "--topic", topic,
                           "--partitions", "2")  # fmt: skip
        assert code == 0 and f"Created topic {topic}." in said, said[-2000:]
        status = json.loads(
            run_cli("gateway", "status", "--json", config=str(gateway.config)).stdout
        )
        assert status["routes"][topic]["cluster"] == "source"
        assert status["default_route"] == "source"
        with ClusterAdmin(clusters.source) as admin:
            assert len(admin.describe_topic(topic).partitions) == 2
        with ClusterAdmin(clusters.target) as home:  # committed offsets live there
            assert len(home.describe_topic(topic).partitions) == 2

        code, said = java_tool(gateway, f"{TOOLS}.TopicCommand", "--alter", "--topic", topic,
                           "--partitions", "4")  # fmt: skip
        assert code == 0, said[-2000:]
        for cluster in (clusters.source, clusters.target):
            with ClusterAdmin(cluster) as admin:
                assert len(admin.describe_topic(topic).partitions) == 4
        # Each instance knows the new count at once (the routing table was written).
        for node_id in gateway.ports:
            one = AdminClient({"bootstrap.servers": gateway.instance(node_id)})
            wait_for(
                lambda a=one: len(a.list_topics(topic, timeout=10).topics[topic].partitions) == 4,
                timeout=10, message=f"instance {node_id} serving 4 partitions",
            )  # fmt: skip
        code, said = java_tool(gateway, f"{TOOLS}.TopicCommand", "--delete", "--topic", topic)
        assert code == 0, said[-2000:]
        for cluster in (clusters.source, clusters.target):
            with ClusterAdmin(cluster) as admin:
                wait_for(lambda a=admin: not a.describe_topics_if_present([topic]),
                         timeout=30, message=f"{topic} deleted on {cluster.name}")  # fmt: skip
        status = json.loads(
            run_cli("gateway", "status", "--json", config=str(gateway.config)).stdout
        )
        assert topic not in status["routes"]
    finally:
        _route(gateway, "default", "--clear")


def test_confluent_admin_client_through_the_gateway(
    clusters: Clusters, gateway: Gateway, used_topic: tuple[str, str], default_route: str
) -> None:
    topic, _ = used_topic
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    cluster = admin.describe_cluster(request_timeout=10).result(20)
    assert {(n.id, f"{n.host}:{n.port}") for n in cluster.nodes} == {
        (i, gateway.instance(i)) for i in gateway.ports
    }
    assert cluster.controller.id in gateway.ports

    (configs,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    through = {k: e.value for k, e in configs.result(20).items()}
    direct = AdminClient({"bootstrap.servers": clusters.source.bootstrap_servers})
    (direct_configs,) = direct.describe_configs(
        [ConfigResource(ResourceType.TOPIC, topic)]
    ).values()
    assert through == {k: e.value for k, e in direct_configs.result(20).items()}
    (broker,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, "2")]).values()
    assert broker.result(20)["advertised.listeners"].value == f"PLAINTEXT://{gateway.instance(2)}"

    new = unique("adm-cf")
    admin.create_topics([NewTopic(new, 2)])[new].result(30)
    admin.create_partitions([NewPartitions(new, 3)])[new].result(30)
    with ClusterAdmin(clusters.source) as source:
        assert len(source.describe_topic(new).partitions) == 3

    # Metadata reaches each gateway instance (and each broker) a moment after
    # CreatePartitions, as with Kafka itself: a producer that asks an instance too early
    # fails its records to the new partition ("unknown partition"), and librdkafka's
    # DeleteRecords asks once.
    each = [AdminClient({"bootstrap.servers": gateway.instance(i)}) for i in gateway.ports]

    def grown_everywhere() -> bool:
        for one in each:
            listed = one.list_topics(new, timeout=10).topics[new].partitions
            if len(listed) != 3 or any(p.leader < 0 for p in listed.values()):
                return False
        return True

    wait_for(grown_everywhere, timeout=30, message=f"{new}'s 3 partitions led, on each instance")
    producer = Producer({"bootstrap.servers": gateway.bootstrap})
    failed: list[str] = []
    for _ in range(6):
        producer.produce(
            new, b"x", partition=2, on_delivery=lambda e, _m: failed.append(str(e)) if e else None
        )
    assert producer.flush(60) == 0 and not failed, failed
    (deleted,) = admin.delete_records([TopicPartition(new, 2, 4)]).values()
    assert deleted.result(30).low_watermark == 4
    with ClusterAdmin(clusters.source) as source:
        assert [(w.low, w.high) for w in source.watermarks(new)] == [(0, 0), (0, 0), (4, 6)]
