"""Clients that run through a whole operation in the integration tests: an idempotent
acks=all producer that remembers what was acknowledged, and a consumer group member
that commits as it goes. Afterwards a test checks every acknowledged record."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


class Traffic(threading.Thread):
    """Produces numbered records (acks=all, idempotent) until stopped; counts the acked."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer(
            {**config, "enable.idempotence": True, "acks": "all", "message.timeout.ms": 120_000}
        )
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.done = threading.Event()

    def _report(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked.add(message.value())
        else:
            self.failed.append(error.str())

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            for _ in range(20):
                self.producer.produce(self.topic, f"r{n}".encode(), on_delivery=self._report)
                n += 1
            self.producer.poll(0)
            self.done.wait(0.05)
        self.producer.flush(120)


class Group(threading.Thread):
    """A consumer group member that commits after every poll, through the whole move."""

    def __init__(self, config: dict[str, Any], topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                **config,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([topic])
        self.seen: set[bytes] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            messages = self.consumer.consume(500, 0.2)
            records = [m for m in messages if m.error() is None]
            self.seen.update(m.value() for m in records)
            if records:
                # A broker restarting refuses the commit: the next one covers these.
                with contextlib.suppress(KafkaException):
                    self.consumer.commit(asynchronous=False)
        self.consumer.close()
