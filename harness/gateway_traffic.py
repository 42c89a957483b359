"""Clients for the gateway tests and the gateway kill-point sweep: an idempotent producer
that keeps writing through outages and a committing consumer group, both through the
gateway."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from harness.gateway import Gateway
from harness.helpers import run_cli, unique
from kmigrate.config import ClusterConfig
from kmigrate.kafka.admin import ClusterAdmin


class Traffic(threading.Thread):
    """An idempotent producer writing numbered records to each topic in turn, acks
    timed; it keeps retrying through outages (a long delivery timeout)."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        super().__init__(daemon=True)
        self.topics = topics
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
             "message.timeout.ms": 180_000, "topic.metadata.refresh.interval.ms": 2000,
             "statistics.interval.ms": 500, "stats_cb": self._stats}
        )  # fmt: skip
        self.acked: dict[str, list[tuple[bytes, float]]] = {t: [] for t in topics}
        self.failed: list[str] = []
        self.partition_of: dict[bytes, int] = {}
        self.producer_ids = 0  # producer id/epoch assignments seen (librdkafka statistics)
        self.done = threading.Event()

    def _stats(self, raw: str) -> None:
        eos = json.loads(raw).get("eos", {})
        self.producer_ids = max(self.producer_ids, int(eos.get("epoch_cnt", 0)))

    def _report(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked[message.topic()].append((message.value(), time.monotonic()))
            self.partition_of[message.value()] = message.partition()
        else:
            self.failed.append(error.str())

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            for topic in self.topics:
                self.producer.produce(topic, f"{topic}-{n}".encode(), on_delivery=self._report)
            n += 1
            self.producer.poll(0.01)
        assert self.producer.flush(180) == 0

    def count(self, topic: str) -> int:
        return len(self.acked[topic])

    def values(self) -> set[bytes]:
        return {v for acks in self.acked.values() for v, _ in acks}


class Reader(threading.Thread):
    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": unique("gw-faults"),
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )  # fmt: skip
        self.consumer.subscribe(topics)
        self.seen: list[bytes] = []
        self.offsets: list[tuple[str, int, int, bytes]] = []  # topic, partition, offset, value
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            messages = [m for m in self.consumer.consume(500, 0.2) if m.error() is None]
            self.seen.extend(m.value() for m in messages)
            self.offsets.extend((m.topic(), m.partition(), m.offset(), m.value()) for m in messages)
            if messages:
                # The instance serving the coordinator died: the next commit covers these.
                with contextlib.suppress(KafkaException):
                    self.consumer.commit(asynchronous=False)
        self.consumer.close()


def route(gw: Gateway, topic: str, cluster: str) -> None:
    done = run_cli("gateway", "route", "set", "--topic", topic, "--cluster", cluster,
                   config=str(gw.config))  # fmt: skip
    assert done.code == 0, done.stderr


def routed_topic(gw: Gateway, origin: ClusterConfig, prefix: str, partitions: int) -> str:
    """A new topic on ``origin`` with ``partitions`` partitions, routed there."""
    topic = unique(prefix)
    with ClusterAdmin(origin) as admin:
        admin.create_topic(topic, partitions)
    route(gw, topic, origin.name)
    return topic


def read_once(reader: Reader) -> dict[tuple[int, int], bytes]:
    """What ``reader`` read by (partition, offset), checking that no offset named two
    records and no record was read at two offsets."""
    by_offset: dict[tuple[int, int], bytes] = {}
    for _, p, offset, value in reader.offsets:
        assert by_offset.setdefault((p, offset), value) == value, f"offset {p}/{offset} jumped"
    assert len(set(by_offset.values())) == len(by_offset), "a record read at two offsets"
    return by_offset
