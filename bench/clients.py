"""The clients a bench runs through an operation: a steady acks=all producer whose every
acknowledgement is timed, and a consumer group that commits after every poll."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


class Load(threading.Thread):
    """Numbered records at a steady rate; every acknowledgement timed."""

    def __init__(self, config: dict[str, Any], rate: int, topic: str) -> None:
        super().__init__(daemon=True)
        self.rate = rate
        self.topic = topic
        self.stats: dict[str, Any] = {}
        self.producer = Producer(
            {
                **config,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 300_000,
                "statistics.interval.ms": 1000,
                "stats_cb": self._stats,
            }
        )
        self.sent: dict[bytes, float] = {}
        self.acked: dict[bytes, float] = {}
        self.failed: list[str] = []
        self.done = threading.Event()

    def _stats(self, text: str) -> None:
        self.stats = json.loads(text)

    def _report(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked[message.value()] = time.monotonic()
        else:
            self.failed.append(error.str())

    def run(self) -> None:
        n, started = 0, time.monotonic()
        while not self.done.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while n < due:
                value = f"r{n}".encode()
                self.sent[value] = time.monotonic()
                self.producer.produce(self.topic, value, on_delivery=self._report)
                n += 1
            self.producer.poll(0.01)
        self.producer.flush(300)
        self.producer.poll(1.5)  # one more statistics callback after the flush

    def retries(self) -> int:
        return sum(b.get("txretries", 0) for b in self.stats.get("brokers", {}).values())

    def longest_pause(self) -> float:
        """The longest time without an acknowledgement while records were waiting."""
        acks = sorted(self.acked.values())
        return max((later - earlier for earlier, later in itertools.pairwise(acks)), default=0.0)

    def slowest_ack(self) -> float:
        return max((self.acked[v] - self.sent[v] for v in self.acked), default=0.0)


class Group(threading.Thread):
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
        self.seen: list[bytes] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            records = [m for m in self.consumer.consume(500, 0.2) if m.error() is None]
            self.seen.extend(m.value() for m in records)
            if records:
                # The coordinator moved: the next commit covers these.
                with contextlib.suppress(KafkaException):
                    self.consumer.commit(asynchronous=False)
        self.consumer.close()
