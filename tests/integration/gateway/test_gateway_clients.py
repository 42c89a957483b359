"""Clients use the gateway as if it were one Kafka cluster: topics routed to two
backend clusters at once, produced and consumed with a committing group through a
two-instance gateway; every acknowledged record is read exactly once and sits on the
backend its route names."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from harness.gateway import Gateway
from harness.helpers import java_on, run_cli, unique, wait_for
from kmigrate.gateway.control.producers import FORGET_AFTER_S, ProducerIds
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.net import free_ports
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from tests.integration.conftest import Clusters

RECORDS = 400


def _route(gw: Gateway, topic: str, cluster: str, *extra: str) -> None:
    done = run_cli("gateway", "route", "set", "--topic", topic, "--cluster", cluster, *extra,
                   config=str(gw.config))  # fmt: skip
    assert done.code == 0, done.stderr


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> set[bytes]:
    acked: set[bytes] = set()
    failed: list[str] = []

    def report(error: KafkaError | None, message: Any) -> None:
        (failed.append(error.str()) if error else acked.add(message.value()))

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    for value in values:
        producer.produce(topic, value, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    return acked


def _consume(bootstrap: str, topics: list[str], group: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe(topics)
    seen: list[bytes] = []

    def more() -> bool:
        before = len(seen)
        for message in consumer.consume(500, 0.5):
            if message.error() is None:
                seen.append(message.value())
        if len(seen) > before:  # committing nothing new fails: "No offset stored"
            consumer.commit(asynchronous=False)
        return len(seen) >= expected

    try:
        wait_for(more, timeout=90, message=f"{expected} records through the gateway")
        return seen
    finally:
        consumer.close()


def test_produce_and_consume_with_a_group_over_two_backends(
    clusters: Clusters, gateway: Gateway
) -> None:
    on_source, on_target = unique("gw-src"), unique("gw-tgt")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(on_source, 3)
    with ClusterAdmin(clusters.target) as admin:
        admin.create_topic(on_target, 2)
    _route(gateway, on_source, "source")
    _route(gateway, on_target, "target")

    values = {t: [f"{t}-{n}".encode() for n in range(RECORDS)] for t in (on_source, on_target)}
    acked = set()
    for topic, batch in values.items():
        acked |= _produce(gateway.bootstrap, topic, batch)
    assert len(acked) == 2 * RECORDS

    group = unique("gw-group")
    seen = _consume(gateway.bootstrap, [on_source, on_target], group, 2 * RECORDS)
    assert len(seen) == len(set(seen)) == 2 * RECORDS, "each record read exactly once"
    assert set(seen) == acked

    # Each topic's records are on the backend its route names, and only there.
    for cluster, topic in ((clusters.source, on_source), (clusters.target, on_target)):
        with ClusterAdmin(cluster) as admin:
            marks = admin.watermarks(topic)
        stored = [
            r.value for w in marks for r in read_partition(cluster, topic, w.partition, 0, w.high)
        ]
        assert sorted(stored) == sorted(values[topic])
    with ClusterAdmin(clusters.target) as admin:  # the group home holds the commits
        committed = {(c.topic, c.partition): c.committed for c in admin.committed_offsets(group)}
    assert sum(committed.values()) == 2 * RECORDS

    # A consumer of the same group, through the other instance only, starts at the end.
    consumer = Consumer({"bootstrap.servers": gateway.instance(2), "group.id": group})
    try:
        offsets = consumer.committed([TopicPartition(on_source, p) for p in range(3)], 30)
    finally:
        consumer.close()
    # The same commits as the group home holds (a partition the sticky partitioner left
    # empty has none: -1001).
    through = {(o.topic, o.partition): o.offset for o in offsets if o.offset >= 0}
    assert through == {k: v for k, v in committed.items() if k[0] == on_source}
    assert sum(through.values()) == RECORDS


def test_a_route_changed_while_idle_reaches_every_instance(
    clusters: Clusters, gateway: Gateway
) -> None:
    topic = unique("gw-late")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 1)
    admins = {i: AdminClient({"bootstrap.servers": gateway.instance(i)}) for i in gateway.ports}
    for admin in admins.values():
        assert topic not in admin.list_topics(timeout=10).topics
    _route(gateway, topic, "source")
    for node_id, admin in admins.items():
        wait_for(
            lambda admin=admin: (
                topic in admin.list_topics(topic, timeout=10).topics
                and admin.list_topics(topic, timeout=10).topics[topic].error is None
            ),
            timeout=5,
            message=f"instance {node_id} serving the new route",
        )
    acked = _produce(gateway.instance(2), topic, [b"late"])
    assert acked == {b"late"}

    # One partition routed elsewhere: its records land on that cluster only.
    with ClusterAdmin(clusters.target) as admin:
        admin.create_topic(topic + "-split", 2)
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic + "-split", 2)
    _route(gateway, topic + "-split", "source")
    _route(gateway, topic + "-split", "target", "--partitions", "1")
    status = run_cli("gateway", "status", "--json", config=str(gateway.config))
    body = json.loads(status.stdout)
    assert [i["id"] for i in body["instances"]] == [1, 2]
    assert body["routes"][topic + "-split"] == {"cluster": "source", "partitions": {"1": "target"}}
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "enable.idempotence": True})
    for partition in (0, 1):
        producer.produce(topic + "-split", f"p{partition}".encode(), partition=partition)
    assert producer.flush(60) == 0
    with ClusterAdmin(clusters.source) as admin:
        assert [w.high for w in admin.watermarks(topic + "-split")] == [1, 0]
    with ClusterAdmin(clusters.target) as admin:
        assert [w.high for w in admin.watermarks(topic + "-split")] == [0, 1]


def test_a_malformed_frame_closes_only_its_own_connection(gateway: Gateway) -> None:
    host, port = gateway.instance(1).split(":")
    with socket.create_connection((host, int(port)), timeout=10) as bad:
        bad.sendall(b"\x00\x00\x00\x0c" + b"\x00\x03\xff\xff" + b"garbage!")
        assert bad.recv(100) == b"", "the gateway closed the connection"
    with socket.create_connection((host, int(port)), timeout=10) as huge:
        huge.sendall(b"\x7f\xff\xff\xff")
        assert huge.recv(100) == b""
    assert "closing client connection" in gateway.log_tail(1)
    admin = AdminClient({"bootstrap.servers": gateway.instance(1)})
    assert admin.list_topics(timeout=10).brokers, "the instance still serves everyone else"


def test_the_kip_848_consumer_protocol_is_refused_clearly(gateway: Gateway) -> None:
    """The gateway serves the classic group protocol only and does not list
    ConsumerGroupHeartbeat: a Java consumer asking for the new protocol gets the
    client's own UnsupportedVersionException naming it, and reads nothing."""
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    read = subprocess.run(
        [*java_on(jars), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", gateway.bootstrap, "--topic", "anything", "--group", "g848",
         "--consumer-property", "group.protocol=consumer", "--timeout-ms", "10000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    said = read.stdout + read.stderr
    assert "does not support CONSUMER_GROUP_HEARTBEAT" in said, said[-2000:]
    assert "Processed a total of 0 messages" in said


def test_kafka_python_and_the_java_client_through_the_gateway(
    clusters: Clusters, gateway: Gateway
) -> None:
    """kafka-python and Kafka's own console producer (idempotent by default: its batches
    are rewritten for `source`) write to a topic on each backend; Kafka's console
    consumer and kafka-python, each with a group, read every record once."""
    topics = {"source": unique("gw-py-src"), "target": unique("gw-py-tgt")}
    for cluster, topic in topics.items():
        with ClusterAdmin(clusters.source if cluster == "source" else clusters.target) as admin:
            admin.create_topic(topic, 2)
        _route(gateway, topic, cluster)

    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks="all")
    futures = [producer.send(t, f"py-{t}-{n}".encode()) for t in topics.values() for n in range(50)]
    producer.flush(60)
    assert all(f.get(30) for f in futures)
    producer.close()

    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    expected = [f"py-{t}-{n}" for t in topics.values() for n in range(50)]
    for topic in topics.values():
        java_values = [f"java-{topic}-{n}" for n in range(50)]
        sent = subprocess.run(
            [*java_on(jars), "org.apache.kafka.tools.ConsoleProducer",
             "--bootstrap-server", gateway.bootstrap, "--topic", topic,
             "--producer-property", "enable.idempotence=true", "--producer-property", "acks=all"],
            input="\n".join(java_values) + "\n", capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stdout + sent.stderr
        expected += java_values

    read = subprocess.run(
        [*java_on(jars), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", gateway.bootstrap, "--include", "|".join(topics.values()),
         "--group", unique("gw-java"), "--from-beginning", "--max-messages", "200",
         "--timeout-ms", "60000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    assert sorted(read.stdout.split()) == sorted(expected), "Java read each record once"

    consumer = KafkaConsumer(
        *topics.values(),
        bootstrap_servers=gateway.bootstrap,
        group_id=unique("gw-kafka-python"),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
    )
    seen = []
    for message in consumer:
        seen.append(message.value.decode())
        if len(seen) == len(expected):
            break
    consumer.commit()
    consumer.close()
    assert sorted(seen) == sorted(expected), "kafka-python read each record once"


def test_an_instance_that_cannot_start_says_why_in_one_line(
    gateway: Gateway, tmp_path: Path
) -> None:
    """A port in use, an unreachable group home, an id already registered."""
    config = str(gateway.config)
    taken = run_cli("gateway", "start", "--listen", gateway.instance(1), "--id", "7", config=config)
    dead = yaml.safe_load(gateway.config.read_text())
    dead["clusters"]["nowhere"] = {"bootstrap_servers": f"127.0.0.1:{free_ports(1)[0]}"}
    dead["gateway"]["group_home"] = "nowhere"
    (tmp_path / "dead.yaml").write_text(yaml.safe_dump(dead))
    no_home = run_cli("gateway", "start", "--listen", f"127.0.0.1:{free_ports(1)[0]}", "--id", "8",
                      config=str(tmp_path / "dead.yaml"))  # fmt: skip
    twice = run_cli("gateway", "start", "--listen", f"127.0.0.1:{free_ports(1)[0]}", "--id", "2",
                    config=config)  # fmt: skip
    for result, code, says in (
        (taken, 2, f"cannot listen on {gateway.instance(1)}"),
        (no_home, 3, "the group home cluster 'nowhere' does not answer"),
        (twice, 5, "gateway instance id 2 is already registered"),
    ):
        lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert result.code == code, result.stderr[-1500:]
        assert len(lines) == 1 and says in lines[0], result.stderr[-1500:]
        assert "Traceback" not in result.stderr
    assert gateway.registered() == {1, 2}


def test_producer_id_translations_are_touched_while_used_and_forgotten_after_a_week(
    gateway: Gateway,
) -> None:
    zk = KazooClient(hosts=gateway.connect)
    zk.start(timeout=15)
    base = f"/{unique('tend')}"
    try:
        ids = ProducerIds(zk, base, lambda name: pytest.fail(f"no backend needed: {name}"))
        for pid in (7, 8):
            zk.create(f"{base}/producers/{pid}-0/source", f"{pid}0:0".encode(), makepath=True)
        ids._known[((8, 0), "source")] = (80, 0)  # this instance uses producer 8
        before = zk.get(f"{base}/producers/8-0/source")[1]
        ids.touch()
        after = zk.get(f"{base}/producers/8-0/source")[1]
        assert after.version == before.version + 1 and after.mtime >= before.mtime
        assert ids.forget_idle() == 0, "nothing is a week old yet"
        assert sorted(zk.get_children(f"{base}/producers")) == ["7-0", "8-0"]
        week_later = after.mtime + int(FORGET_AFTER_S * 1000) + 1
        assert ids.forget_idle(week_later) == 2
        assert zk.get_children(f"{base}/producers") == []
    finally:
        zk.delete(base, recursive=True)
        zk.stop()
        zk.close()
