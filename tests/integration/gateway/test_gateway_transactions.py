"""Transactions through a two-instance gateway: they run on the group home (`target`).

* confluent-kafka's transactional producer: committed transactions read by a
  read_committed consumer in order, an aborted one never;
* Kafka Streams with exactly_once_v2 (consume-transform-produce): the output is the
  input, upper-cased, record by record, exactly once, through a move of an input
  partition and a gateway instance killed with -9;
* a transaction touching a partition on `source` is refused with a reason naming it;
* a move of a partition with an open transaction waits for it, or is refused naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.gateway import Gateway
from harness.gateway_traffic import routed_topic
from harness.helpers import java_on, run_cli, seeded, unique, wait_for
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.maven import cache_dir, fetch_jars
from tests.integration.conftest import Clusters

STREAMS = Path(__file__).with_name("streams")
KAFKA_VERSION = "4.3.1"


def _transactional(gw: Gateway, txn_id: str, **extra: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": gw.bootstrap, "transactional.id": txn_id, "linger.ms": 5, **extra}
    )
    producer.init_transactions(30)
    return producer


def _read_committed(
    bootstrap: str, topic: str, partitions: int, expected: int
) -> dict[int, list[tuple[int, str | None, str]]]:
    """Per partition, (offset, key, value) of every committed record, once ``expected``
    records were read and nothing more came for a moment."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique("txn-read"),
         "isolation.level": "read_committed", "enable.auto.commit": False}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found: dict[int, list[tuple[int, str | None, str]]] = {p: [] for p in range(partitions)}

    def take(wait_s: float) -> int:
        for m in consumer.consume(500, wait_s):
            if m.error() is None:
                key = m.key().decode() if m.key() is not None else None
                found[m.partition()].append((m.offset(), key, m.value().decode()))
        return sum(map(len, found.values()))

    try:
        wait_for(lambda: take(0.5) >= expected, timeout=90,
                 message=f"{expected} committed records of {topic}")  # fmt: skip
        take(1.0)  # a record read twice would show here
    finally:
        consumer.close()
    return found


def test_transactions_commit_and_abort_through_the_gateway(
    clusters: Clusters, gateway: Gateway
) -> None:
    topic = routed_topic(gateway, clusters.target, "txn-plain", 2)
    producer = _transactional(gateway, unique("tx-plain"))
    sent: dict[int, list[str]] = {0: [], 1: []}
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for n in range(100):
            value = f"r{round_}-{n}"
            producer.produce(topic, value.encode(), partition=n % 2)
            if commit:
                sent[n % 2].append(value)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # the aborted records reach the log before the abort
            producer.abort_transaction(30)
    found = _read_committed(gateway.bootstrap, topic, 2, 200)
    for p in (0, 1):
        assert [v for _, _, v in found[p]] == sent[p], f"partition {p}: committed, in order"


def test_a_transaction_touching_another_backend_is_refused_with_the_reason(
    clusters: Clusters, gateway: Gateway
) -> None:
    on_home = routed_topic(gateway, clusters.target, "txn-home", 1)
    elsewhere = routed_topic(gateway, clusters.source, "txn-far", 1)
    txn_id = unique("tx-span")
    producer = _transactional(gateway, txn_id, **{"transaction.timeout.ms": 10_000})
    producer.begin_transaction()
    producer.produce(on_home, b"home")
    producer.produce(elsewhere, b"far")
    with pytest.raises(KafkaException) as refused:
        producer.commit_transaction(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_TXN_STATE, error
    logs = gateway.log_tail(1) + gateway.log_tail(2)
    assert (
        f"transaction '{txn_id}' refused: {elsewhere}[0] is on cluster 'source', and "
        "transactions through the kmigrate gateway run on the group home 'target' only"
    ) in logs
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": unique("txn-far")})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(elsewhere, 0), timeout=10)
    finally:
        consumer.close()
    assert high == 0, "nothing of the refused transaction reached the other backend"


def _migrate(gw: Gateway, topic: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kmigrate", "--config", str(gw.config), "gateway", "migrate",
            "--topic", topic, "--partitions", "0", "--cluster", "source", "--json",
            *extra]  # fmt: skip


def test_a_move_never_splits_an_open_transaction(
    clusters: Clusters, gateway: Gateway, tmp_path: Path
) -> None:
    topic = routed_topic(gateway, clusters.target, "txn-move", 1)
    txn_id = unique("tx-move")
    producer = _transactional(gateway, txn_id)
    producer.begin_transaction()
    values = [f"m{n}" for n in range(10)]
    for value in values:
        producer.produce(topic, value.encode(), partition=0)
    producer.flush(30)

    # Still open when the fence's time is up: refused, naming it; nothing moved.
    refused = run_cli(
        "gateway", "migrate", "--topic", topic, "--partitions", "0", "--cluster", "source",
        "--fence-timeout", "2", config=str(gateway.config),
    )  # fmt: skip
    assert refused.code == 5, refused.stderr[-2000:]
    assert f"{topic}[0]: transactional id '{txn_id}'" in refused.stderr
    assert "never splits a transaction" in refused.stderr
    assert _cluster_of(gateway, topic) == "target"

    # Committed while the move waits: the move goes on after it, the whole transaction
    # below the migration offset, on the origin.
    said = tmp_path / "migrate.err"
    with said.open("w") as err:
        move = subprocess.Popen(_migrate(gateway, topic), stdout=subprocess.PIPE, stderr=err,
                                text=True)  # fmt: skip
    try:
        wait_for(lambda: txn_id in said.read_text() or move.poll() is not None, timeout=60,
                 message="the move waiting for the open transaction")  # fmt: skip
        assert move.poll() is None, said.read_text()
        more = [f"m{n}" for n in range(10, 15)]  # the open transaction writes on, fenced
        for value in more:
            producer.produce(topic, value.encode(), partition=0)
        assert producer.flush(30) == 0, "a transaction's writes were parked by the fence"
        values += more
        producer.commit_transaction(30)
        out, _ = move.communicate(timeout=60)
    finally:
        if move.poll() is None:
            move.kill()
    assert move.returncode == 0, said.read_text()[-2000:]
    (moved,) = json.loads(out)["moved"]
    assert moved["end_offset"] == len(values) + 1  # the records and the commit marker
    assert _cluster_of(gateway, topic) == "source"
    found = _read_committed(gateway.bootstrap, topic, 1, len(values))
    assert [(o, v) for o, _, v in found[0]] == list(enumerate(values))


def _cluster_of(gw: Gateway, topic: str) -> str | None:
    registry = Registry(gw.connect, "/kmigrate-gateway", "gw")
    try:
        return registry.read_routes().cluster_of(topic, 0)
    finally:
        registry.close()


def test_kafka_streams_exactly_once_v2_through_the_gateway(
    clusters: Clusters, gateway: Gateway, tmp_path: Path
) -> None:
    """Consume-transform-produce with transactions: an upper-case copy of a topic, read
    back with read_committed: each input record once, in order per key. The input lives
    on `source` (reads may come from anywhere), and while the application runs, one of
    its partitions moves to `target` and a gateway instance is killed with -9."""
    rng = seeded()
    source = routed_topic(gateway, clusters.source, "eos-in", 2)
    sink = routed_topic(gateway, clusters.target, "eos-out", 2)
    keys = [f"k{n}" for n in range(6)]
    sent = [(keys[n % 6], f"value-{n}") for n in range(1200)]
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 120_000})  # fmt: skip

    def send(batch: list[tuple[str, str]]) -> None:
        for key, value in batch:
            producer.produce(source, value.encode(), key=key.encode())
        assert producer.flush(120) == 0

    send(sent[:300])
    jars = fetch_jars(
        STREAMS / "pom.xml", cache_dir() / "jars" / f"kafka-streams-{KAFKA_VERSION}",
        {"kafka.version": KAFKA_VERSION}, f"Kafka Streams {KAFKA_VERSION} jars",
    )  # fmt: skip
    log = tmp_path / "streams.log"
    with log.open("w") as out:
        app = subprocess.Popen(
            [*java_on(jars), "-Xmx256m", str(STREAMS / "UpperCase.java"),
             gateway.bootstrap, unique("eos-app"), source, sink, str(tmp_path / "state")],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for(lambda: "state RUNNING" in log.read_text(), timeout=90,
                 message="the Streams application running")  # fmt: skip
        moved = run_cli("gateway", "migrate", "--topic", source, "--partitions", "0",
                        "--cluster", "target", config=str(gateway.config))  # fmt: skip
        assert moved.code == 0, moved.stderr
        send(sent[300:600])
        victim = rng.choice(sorted(gateway.procs))
        gateway.kill(victim)  # -9, with the application's transactions going on
        send(sent[600:900])
        gateway.start(victim)
        send(sent[900:])
        found = _read_committed(gateway.bootstrap, sink, 2, len(sent))
    except AssertionError:
        raise AssertionError(log.read_text()[-4000:]) from None
    finally:
        assert app.stdin is not None
        app.stdin.close()
        try:
            app.wait(60)
        except subprocess.TimeoutExpired:
            app.kill()
    by_key: dict[str | None, list[str]] = {}
    for records in found.values():
        for _, key, value in records:
            by_key.setdefault(key, []).append(value)
    expected: dict[str | None, list[str]] = {}
    for key, value in sent:
        expected.setdefault(key, []).append(value.upper())
    assert by_key == expected, "each record once, upper-cased, in order per key"
    assert "closed" in log.read_text(), log.read_text()[-4000:]
