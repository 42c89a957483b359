"""The demo's application: a steady producer and a consumer group that keep a ledger.

The producer numbers its records (value ``seq=N``) and counts only delivered ones;
the consumer notes every number it sees and commits synchronously after each batch,
so a clean stop leaves its commit exactly after what it consumed. Both move from
the source cluster to the target mid-run, as the real applications would.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from kmigrate.config import ClusterConfig
from kmigrate.kafka.clients import consumer, producer


class SteadyProducer:
    """Writes ``rate`` records/s to ``topic`` on one cluster; pause() and resume(cluster)."""

    def __init__(self, cluster: ClusterConfig, topic: str, rate: float, first_seq: int) -> None:
        self.topic = topic
        self.rate = rate
        self.delivered: list[int] = []
        self.failed = 0
        self._cluster = cluster
        self._next = first_seq
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="demo-producer", daemon=True)
        self.paused_at: float | None = None
        self.pause_s: float | None = None
        self.longest_wait_s = 0.0  # the longest a record waited for its acknowledgement
        self.waits: list[tuple[float, float]] = []  # (sent, seconds to its answer), each record

    def start(self) -> None:
        self._running.set()
        self._thread.start()

    def longest_wait_between(self, began: float, ended: float) -> float:
        """The longest wait for an answer of a record sent in [began, ended]
        (time.monotonic()): what producers felt of a step that ran then."""
        return max((w for sent, w in list(self.waits) if began <= sent <= ended), default=0.0)

    def pause(self) -> None:
        """Stop writing and wait until every record sent so far is delivered."""
        self._running.clear()
        with self._lock:  # the loop holds it while it produces and flushes
            self.paused_at = time.monotonic()

    def resume(self, cluster: ClusterConfig) -> None:
        with self._lock:
            self._cluster = cluster
            if self.paused_at is not None:
                self.pause_s = time.monotonic() - self.paused_at
        self._running.set()

    def stop(self) -> None:
        self.pause()
        self._stop.set()
        self._running.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._running.wait()
            with self._lock:
                cluster = self._cluster
                client = producer(cluster, None, **{"acks": "all", "enable.idempotence": True})
                try:
                    self._produce_while_running(client)
                finally:
                    client.flush(30)

    def _produce_while_running(self, client: object) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while self._running.is_set() and not self._stop.is_set():
            seq = self._next
            self._next += 1
            client.produce(  # type: ignore[attr-defined]
                self.topic,
                key=f"customer-{seq % 97}".encode(),
                value=f"seq={seq}".encode(),
                on_delivery=self._on_delivery(seq),
            )
            client.poll(0)  # type: ignore[attr-defined]
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # pacing: the demo's producer writes at a steady rate

    def _on_delivery(self, seq: int) -> object:
        sent = time.monotonic()

        def report(error: KafkaError | None, _message: object) -> None:
            waited = time.monotonic() - sent
            self.longest_wait_s = max(self.longest_wait_s, waited)
            self.waits.append((sent, waited))
            if error is None:
                self.delivered.append(seq)
            else:
                self.failed += 1

        return report


@dataclass
class Ledger:
    """What the consumer group saw, record by record."""

    seen: Counter[int] = field(default_factory=Counter)
    by_cluster: Counter[str] = field(default_factory=Counter)

    def duplicates(self) -> list[int]:
        return sorted(n for n, c in self.seen.items() if c > 1)

    def missing(self, delivered: list[int]) -> list[int]:
        return sorted(set(delivered) - set(self.seen))


class GroupConsumer:
    """One member of ``group`` on one cluster; stop() leaves the commit after what it saw."""

    def __init__(self, group: str, topic: str, ledger: Ledger) -> None:
        self.group = group
        self.topic = topic
        self.ledger = ledger
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def start(self, cluster: ClusterConfig) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(cluster,), name="demo-consumer", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _loop(self, cluster: ClusterConfig) -> None:
        client = consumer(
            cluster,
            None,
            **{
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            },
        )
        try:
            client.subscribe([self.topic])
            while not self._stop.is_set():
                batch = client.consume(num_messages=500, timeout=0.5)
                taken = [msg for msg in batch if msg.error() is None]
                for msg in taken:
                    self.ledger.seen[int(msg.value().split(b"=")[1])] += 1
                    self.ledger.by_cluster[cluster.name] += 1
                if taken:
                    client.commit(asynchronous=False)
        except Exception as exc:  # surfaced by the scenario, which checks .error
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            client.close()
