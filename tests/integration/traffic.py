"""Clients that run through a whole operation in the integration tests: an idempotent
acks=all producer that remembers what was acknowledged, and a consumer group member
that commits as it goes. Afterwards a test checks every acknowledged record."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from tests.helpers import wait_for


class Traffic(threading.Thread):
    """Produces numbered records (acks=all, idempotent) until stopped; counts the acked."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer(
            {**config, "enable.idempotence": True, "acks": "all", "message.timeout.ms": 120_000}
        )
        self.acked: set[bytes] = set()
        self.where: dict[bytes, tuple[int, int]] = {}  # acked value -> (partition, offset)
        self.sent: set[bytes] = set()
        self.failed: list[str] = []
        self.done = threading.Event()

    def _report(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked.add(message.value())
            self.where[message.value()] = (message.partition(), message.offset())
        else:
            self.failed.append(error.str())

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            for _ in range(20):
                value = f"r{n}".encode()
                self.sent.add(value)
                self.producer.produce(self.topic, value, on_delivery=self._report)
                n += 1
            self.producer.poll(0)
            self.done.wait(0.05)
        self.producer.flush(120)

    def check_stored(self, values: list[bytes]) -> None:
        """``values`` (the topic read back) hold every acknowledged record once and
        nothing this producer did not send. A record sent but never acknowledged (its
        answer lost while a broker restarted, or still out when the flush gave up) may
        be there or not: Kafka promises nothing about it either way."""
        assert len(values) == len(set(values)), "a record was written twice"
        missing = self.acked - set(values)
        assert not missing, f"acknowledged records missing: {sorted(missing)[:5]}"
        strange = set(values) - self.sent
        assert not strange, f"records nobody sent: {sorted(strange)[:5]}"


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
                # a member the restarted coordinator no longer knows rejoins at once
                # instead of the group waiting out the default 45 s session
                "session.timeout.ms": 10_000,
                # the rebalance timeout: a JoinGroup answer lost in a coordinator restart
                # leaves a phantom member that the group waits for this long (default
                # 300 s); this member polls every 0.2 s
                "max.poll.interval.ms": 20_000,
            }
        )
        self.consumer.subscribe([topic])
        self.seen: set[bytes] = set()
        self.errors: list[str] = []  # what the consumer reported, for a failing test
        self.done = threading.Event()

    def run(self) -> None:
        try:
            while not self.done.is_set():
                messages = self.consumer.consume(500, 0.2)
                self.errors.extend(m.error().str() for m in messages if m.error() is not None)
                records = [m for m in messages if m.error() is None]
                self.seen.update(m.value() for m in records)
                if records:
                    # A broker restarting refuses the commit: the next one covers these.
                    with contextlib.suppress(KafkaException):
                        self.consumer.commit(asynchronous=False)
        except Exception as exc:
            self.errors.append(f"the consumer stopped: {exc!r}")
            raise
        finally:
            self.consumer.close()

    def wait_read(self, traffic: Traffic, timeout: float) -> None:
        """Until the group has read every record ``traffic`` had acknowledged; a failure
        says how many it has not and where (per partition, the first unread offset and
        how many), the consumer's positions, and what it last reported."""
        try:
            wait_for(lambda: self.seen >= traffic.acked, timeout=timeout,
                     message="the group read all")  # fmt: skip
        except AssertionError as exc:
            unread = traffic.acked - self.seen
            first: dict[int, tuple[int, int]] = {}
            for value in unread:
                partition, offset = traffic.where[value]
                low, count = first.get(partition, (offset, 0))
                first[partition] = (min(low, offset), count + 1)
            raise AssertionError(
                f"{exc}: {len(unread)} unread, per partition (first offset, how many): "
                f"{sorted(first.items())}, consumer alive: {self.is_alive()}, "
                f"its positions: {self._positions()}, its last errors: {self.errors[-3:]}"
            ) from None

    def _positions(self) -> str:
        try:
            assigned = self.consumer.assignment()
            return str([(p.partition, p.offset) for p in self.consumer.position(assigned)])
        except (KafkaException, RuntimeError) as exc:
            return f"unknown ({exc})"
