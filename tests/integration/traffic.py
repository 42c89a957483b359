"""Clients that run through a whole operation in the integration tests: an idempotent
acks=all producer that remembers what was acknowledged, and a consumer group member
that commits as it goes (replaced by a new one if it stalls: see STALL_S). Afterwards a
test checks every acknowledged record."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from harness.helpers import wait_for


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


# librdkafka 2.10+ (2.16.0 here) can deadlock in a broker roll
# (https://github.com/confluentinc/librdkafka/issues/5476, fix proposed in
# https://github.com/confluentinc/librdkafka/pull/5304, both open in 2026-11). When
# it decommissions its broker handles (it re-bootstraps once no broker is reachable,
# as when broker 2 restarts before the client reconnected to broker 1), an in-flight
# OffsetForLeaderEpoch request fails with "Broker handle destroyed"; its handler on
# librdkafka's main thread holds the partition's lock and waits for the handle's
# write lock, while the decommissioned broker's thread holds the read lock and waits
# for that partition's lock. The consumer then reads nothing and reports no error; a
# synchronous commit or a close never returns, and Consumer.assignment() waits holding
# the GIL, freezing every Python thread. So the diagnostics never call the client, and
# a member that reads nothing for STALL_S seconds while acknowledged records are unread
# is replaced by a new consumer in the same group, resuming from the committed offsets.
STALL_S = 20.0


class _Member(threading.Thread):
    """One consumer of the group, committing after every poll until ``done``."""

    def __init__(self, group: Group) -> None:
        super().__init__(daemon=True)
        self.group = group
        self.consumer = Consumer(
            {
                **group.config,
                "group.id": group.group_id,
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
        self.consumer.subscribe([group.topic])
        self.polled = time.monotonic()  # when its last call to the client returned
        self.done = threading.Event()

    def run(self) -> None:
        try:
            while not self.done.is_set():
                messages = self.consumer.consume(500, 0.2)
                self.group.errors.extend(m.error().str() for m in messages if m.error() is not None)
                records = [m for m in messages if m.error() is None]
                self.group.record(records)
                if records:
                    # A broker restarting refuses the commit: the next one covers these.
                    with contextlib.suppress(KafkaException):
                        self.consumer.commit(asynchronous=False)
                self.polled = time.monotonic()
        except Exception as exc:
            self.group.errors.append(f"the consumer stopped: {exc!r}")
            raise
        finally:
            self.consumer.close()  # never returns on a deadlocked client: abandoned


class Group(threading.Thread):
    """A consumer group member that commits after every poll, through the whole move;
    ``wait_read`` replaces it by a new consumer in the same group when it stalls."""

    def __init__(self, config: dict[str, Any], topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.config, self.topic, self.group_id = config, topic, group
        self.seen: set[bytes] = set()
        self.errors: list[str] = []  # what the consumer reported, for a failing test
        self.positions: dict[int, int] = {}  # partition -> next offset, as read
        self.replaced: list[str] = []  # why a member was replaced, one entry each
        self.members: list[_Member] = []  # every member, so no stuck client is freed
        self.progressed = time.monotonic()  # when a member last read or was started
        self.done = threading.Event()
        self._replace = threading.Event()

    def record(self, records: list[Any]) -> None:
        """Called by the member with the records it read."""
        for m in records:
            self.seen.add(m.value())
            partition = m.partition()
            self.positions[partition] = max(m.offset() + 1, self.positions.get(partition, 0))
        if records:
            self.progressed = time.monotonic()

    def run(self) -> None:
        while not self.done.is_set():
            member = _Member(self)
            self.members.append(member)
            member.start()
            while not (self.done.is_set() or self._replace.is_set()):
                self.done.wait(0.2)
            self._replace.clear()
            member.done.set()  # a stuck one never sees it: not waited for, kept referenced
        self.members[-1].join(10)

    def replace(self, reason: str) -> None:
        """Start a new member in place of the current one (which is told to stop and
        close but not waited for: a deadlocked client never finishes closing)."""
        self.replaced.append(reason)
        print(f"group {self.group_id}: consumer replaced: {reason}")
        self.progressed = time.monotonic()
        self._replace.set()

    def wait_read(self, traffic: Traffic, timeout: float) -> None:
        """Until the group has read every record ``traffic`` had acknowledged, replacing
        a member that read nothing for STALL_S seconds meanwhile; a failure says how
        many it has not read and where (per partition, the first unread offset and how
        many), the positions it read up to, replacements and its last errors."""

        def read_all() -> bool:
            if self.seen >= traffic.acked:
                return True
            now = time.monotonic()
            if now - self.progressed > STALL_S:
                # a member still polling is rejoining or fetching slowly; one whose last
                # call has not returned is stuck in the client
                polled = self.members[-1].polled if self.members else now
                unread = len(traffic.acked - self.seen)
                self.replace(f"read nothing for {STALL_S:.0f} s with {unread} records unread; "
                             f"its last call returned {now - polled:.0f} s before")  # fmt: skip
            return False

        try:
            wait_for(read_all, timeout=timeout, message="the group read all")
        except AssertionError as exc:
            unread = traffic.acked - self.seen
            first: dict[int, tuple[int, int]] = {}
            for value in unread:
                partition, offset = traffic.where[value]
                low, count = first.get(partition, (offset, 0))
                first[partition] = (min(low, offset), count + 1)
            raise AssertionError(
                f"{exc}: {len(unread)} unread, per partition (first offset, how many): "
                f"{sorted(first.items())}, group thread alive: {self.is_alive()}, "
                f"read up to (partition, next offset): {sorted(self.positions.items())}, "
                f"consumers replaced: {self.replaced}, its last errors: {self.errors[-3:]}"
            ) from None
