"""Clients users run, through two gateway instances, a smooth move of half a topic's
partitions in the middle and an instance killed with -9 at a random moment: Kafka's own
Java producer (5 requests in flight per connection, keyed) and consumer, confluent-kafka
(librdkafka), kafka-python and franz-go (Go) producers, all on one topic at once, and
kafka-python's group consumer beside Java's. What a broker promises them, the gateway
keeps: every acknowledged record read exactly once at the offset its producer was told,
per-partition send order, no failed send, no epoch bump; and afterwards Kafka's admin
tools see only gateway instances and no lag."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from harness.gateway import Gateway
from harness.gateway_traffic import routed_topic
from harness.helpers import run_cli, seeded, unique, wait_for
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from tests.integration.conftest import Clusters
from tests.integration.gateway.verifiable import (
    Client,
    Produced,
    check_accounted,
    franz_producer,
    java_consumer,
    java_epochs,
    java_producer,
    java_tools,
    names_only_gateway,
    python_consumer,
    python_producer,
    wait_read,
)

PARTITIONS = 6


Producers = list[tuple[Client, Produced]]


def _more(producers: Producers, records: int, what: str) -> None:
    """Wait until every producer had ``records`` more records acknowledged."""
    goals = [(c, p, p.count() + records) for c, p in producers]
    wait_for(lambda: all(p.count() >= goal or not c.alive() for c, p, goal in goals),
             timeout=90, message=what)  # fmt: skip
    for client, _ in producers:
        assert client.alive(), client.log_tail()


def move_then_kill(gw: Gateway, topic: str, producers: Producers) -> None:
    """Half the partitions moved smoothly to `target` while records flow, then an
    instance killed with -9 a random number of records later and started again."""
    rng = seeded()
    _more(producers, 500, "records acknowledged before the move")
    moved = run_cli("gateway", "migrate", "--topic", topic, "--partitions", "0,1,2",
                    "--cluster", "target", "--json", config=str(gw.config))  # fmt: skip
    assert moved.code == 0, moved.stderr
    assert [m["partition"] for m in json.loads(moved.stdout)["moved"]] == [0, 1, 2]
    _more(producers, rng.randint(20, 400), "records acknowledged after the move")
    victim = rng.choice(sorted(gw.procs))
    print(f"killing gateway instance {victim} with -9")
    gw.kill(victim, signal.SIGKILL)
    _more(producers, 300, "records acknowledged through the surviving instance")
    gw.start(victim)
    _more(producers, 300, "records acknowledged with both instances back")


def test_clients_keep_order_through_a_move_and_a_kill(
    clusters: Clusters, gateway: Gateway, tmp_path: Path
) -> None:
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    topic = routed_topic(gateway, clusters.source, "gw-client-order", PARTITIONS)
    java = java_producer(jars, gateway.bootstrap, topic, tmp_path, rate=400, keys=60)
    producers = [java] + [
        python_producer(kind, gateway.bootstrap, topic, tmp_path, rate=300, keys=60, prefix=n)
        for n, kind in ((2, "confluent"), (3, "kafka-python"))
    ]
    producers.append(
        franz_producer(gateway.bootstrap, topic, tmp_path, rate=300, keys=60, prefix=4)
    )
    group = unique("gw-client-order")
    consumer, consumed = java_consumer(jars, gateway.bootstrap, topic, group, tmp_path)
    python, python_read = python_consumer(gateway.bootstrap, topic, unique("gw-py"), tmp_path)
    with contextlib.ExitStack() as cleanup:
        for client in [consumer, python, *(c for c, _ in producers)]:
            cleanup.callback(client.kill)
            client.start()
        try:
            move_then_kill(gateway, topic, producers)
        finally:
            for client, _ in producers:
                client.stop()
        for _, produced in producers:
            wait_read(consumed, produced)
            wait_read(python_read, produced)
        # Kafka's consumer commits what it read every 5 s while it runs; its last commit
        # on close is not awaited by anyone (a timed-out one is logged at DEBUG only).
        wait_for(lambda: _committed_to_the_end(gateway.bootstrap, topic, group), timeout=60,
                 message="the Java group's commits reach every partition's end")  # fmt: skip
        consumer.stop()
        python.stop()
    for _, produced in producers:
        check_accounted(produced, consumed.records)
        check_accounted(produced, python_read.records)
    assert len(java_epochs(java[0])) == 1, f"java's ids and epochs: {java_epochs(java[0])}"
    for _, produced in producers[1:]:
        assert len(produced.epochs) == 1, f"{produced.name}: {produced.epochs}"
    _admin_tools_agree(gateway, clusters, topic, group)


def _committed_to_the_end(bootstrap: str, topic: str, group: str) -> bool:
    """Whether ``group``'s committed offsets, read through the gateway, equal the ends."""
    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = reader.committed(parts, timeout=10)
        ends = [reader.get_watermark_offsets(tp, timeout=10)[1] for tp in parts]
        return [c.offset for c in committed] == ends
    finally:
        reader.close()


def _admin_tools_agree(gw: Gateway, clusters: Clusters, topic: str, group: str) -> None:
    """After the move and the kill, Kafka's admin tools through the gateway: every
    partition led by a gateway instance, the Java group's lag 0 everywhere."""
    tools = "org.apache.kafka.tools"
    (code, topics), (code2, groups) = java_tools(
        gw,
        (f"{tools}.TopicCommand", "--describe", "--topic", topic),
        (f"{tools}.consumer.group.ConsumerGroupCommand", "--describe", "--group", group),
    )
    assert code == 0 and code2 == 0, topics + groups
    names_only_gateway(topics + groups, gw, clusters)
    rows = [line.split() for line in groups.splitlines() if line.startswith(group)]
    assert sorted(int(r[2]) for r in rows) == list(range(PARTITIONS)), groups
    assert all(r[5] == "0" for r in rows), f"lag left after reading everything: {groups}"
