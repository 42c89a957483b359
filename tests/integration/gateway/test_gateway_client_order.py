"""Clients users run, through two gateway instances, a smooth move of half a topic's
partitions in the middle and an instance killed with -9 at a random moment: Kafka's own
Java producer (5 requests in flight per connection, keyed) and consumer, confluent-kafka
(librdkafka), kafka-python and franz-go (Go) producers, all on one topic at once. What a
broker promises them, the gateway keeps: every acknowledged record read exactly once at
the offset its producer was told, per-partition send order, no failed send, no epoch
bump."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from tests.helpers import run_cli, seeded, unique, wait_for
from tests.integration.conftest import Clusters
from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.traffic import routed_topic
from tests.integration.gateway.verifiable import (
    Client,
    Produced,
    check_accounted,
    franz_producer,
    java_consumer,
    java_epochs,
    java_producer,
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
                    "--to", "target", "--json", config=str(gw.config))  # fmt: skip
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
    consumer, consumed = java_consumer(
        jars, gateway.bootstrap, topic, unique("gw-client-order"), tmp_path
    )
    with contextlib.ExitStack() as cleanup:
        for client in [consumer, *(c for c, _ in producers)]:
            cleanup.callback(client.kill)
            client.start()
        try:
            move_then_kill(gateway, topic, producers)
        finally:
            for client, _ in producers:
                client.stop()
        for _, produced in producers:
            wait_read(consumed, produced)
        consumer.stop()
    for _, produced in producers:
        check_accounted(produced, consumed.records)
    assert len(java_epochs(java[0])) == 1, f"java's ids and epochs: {java_epochs(java[0])}"
    for _, produced in producers[1:]:
        assert len(produced.epochs) == 1, f"{produced.name}: {produced.epochs}"
