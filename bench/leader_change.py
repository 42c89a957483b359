"""How long one leadership change pauses acks=all producers: librdkafka (confluent-kafka)
and Kafka's own Java producer, on the same cluster and the same elections, with the
brokers' default `replica.fetch.backoff.ms` and with 100 ms.

    .venv/bin/python bench/leader_change.py [--elections 4] [--rate 500]

A 3-broker sandbox (Kafka 4.3.1) in bench/.work per setting, two topics of 12 partitions
(replication factor 3): a confluent-kafka producer writes ``--rate`` 1 KB records per
second to one, Kafka's `ProducerPerformance` (acks=all, linger 5 ms, a line per second)
at the same rate to the other. Each election rotates every partition's replica list by
one (a KIP-455 reassignment of the same replicas: no data moves) and elects the preferred
leaders, so every partition changes leader at once; 12 s apart. Reported per election:
each librdkafka partition's longest acknowledgement wait for records sent from 0.5 s
before to 5 s after it (the slowest partition and the median one), and the longest
latency of Kafka's producer in its one-second windows around it. The first election on
a fresh cluster is slower (warm-up) and is shown apart.
Results: bench/results/leader-change-<date>.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import threading
import time
from pathlib import Path

from common import WORK, java, results_header, write_results
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kmigrate.config import load_settings
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kmigrate.sandbox.state import load_state

SETTINGS = {"default (1000 ms)": {}, "100 ms": {"replica.fetch.backoff.ms": "100"}}


class Acks(threading.Thread):
    """A confluent-kafka producer at ``rate`` records/s: (sent at, wait, partition)."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic, self.rate = topic, rate
        self.waits: list[tuple[float, float, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        value, n, start = os.urandom(1024), 0, time.monotonic()
        while not self.done.is_set():
            while n < (time.monotonic() - start) * self.rate:
                sent = time.monotonic()
                self.producer.produce(
                    self.topic, value,
                    on_delivery=lambda e, m, s=sent: e or self.waits.append(
                        (s, time.monotonic() - s, m.partition())),
                )  # fmt: skip
                n += 1
            self.producer.poll(0.005)
        self.producer.flush(30)

    def longest_per_partition(self, since: float, until: float) -> list[int]:
        worst: dict[int, float] = {}
        for sent, wait, partition in self.waits:
            if since <= sent < until:
                worst[partition] = max(worst.get(partition, 0.0), wait)
        return sorted(round(1000 * w) for w in worst.values())


def tuned_sandbox(directory: Path, configs: dict[str, str]) -> str:
    """A 3-broker cluster with ``configs`` in every broker's server.properties."""
    manager.up(directory, manager.UpRequest(clusters=["p"], brokers=3))
    if configs:
        cluster = load_state(directory).clusters["p"]
        for broker in cluster.brokers:
            props = manager.broker_properties(directory, cluster, broker)
            extra = "".join(f"\n{k}={v}" for k, v in configs.items())
            props.write_text(props.read_text() + extra + "\n")
            manager.stop_broker(directory, "p", broker.node_id, kill=True)  # holds no data
        manager.up(directory, manager.UpRequest(clusters=["p"], brokers=3))
    return load_settings(directory / "clusters.yaml").cluster("p").bootstrap_servers


def one_setting(configs: dict[str, str], elections: int, rate: int, jars: Path) -> list[dict]:
    directory = WORK / "leader-change"
    shutil.rmtree(directory, ignore_errors=True)
    bootstrap = tuned_sandbox(directory, configs)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        layout = [[p % 3 + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1] for p in range(12)]
        made = admin.create_topics(
            [NewTopic(t, 12, replica_assignment=layout) for t in ("py", "java")]
        )
        for future in made.values():
            future.result(60)
        acks = Acks(bootstrap, "py", rate)
        acks.start()
        perf = java(jars, "org.apache.kafka.tools.ProducerPerformance", "--topic", "java",
                    "--num-records", "1000000000", "--throughput", str(rate), "--record-size",
                    "1024", "--reporting-interval", "1000", "--producer-props",
                    f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5")  # fmt: skip
        lines: list[tuple[float, str]] = []
        assert perf.stdout is not None
        reader = threading.Thread(
            target=lambda: lines.extend((time.monotonic(), raw.decode()) for raw in perf.stdout),
            daemon=True,
        )
        reader.start()
        time.sleep(15)  # both producers steady
        cluster = load_settings(directory / "clusters.yaml").cluster("p")
        at = []
        with Reassignments(cluster) as kafka:
            for _ in range(elections):
                listed = admin.list_topics(timeout=10).topics
                now = {
                    (t, p): list(meta.replicas)
                    for t in ("py", "java") for p, meta in listed[t].partitions.items()
                }  # fmt: skip
                kafka.submit({key: r[1:] + r[:1] for key, r in now.items()})
                time.sleep(2)  # the reorder completes at once: nothing to copy
                at.append(time.monotonic())
                kafka.elect_preferred(list(now))
                time.sleep(12)
        acks.done.set()
        acks.join(30)
        os.killpg(perf.pid, 15)
        return [summary(acks, lines, t) for t in at]
    finally:
        manager.down(directory, purge=True, grace=5)


def summary(acks: Acks, lines: list[tuple[float, str]], at: float) -> dict:
    waits = acks.longest_per_partition(at - 0.5, at + 5)
    java_max = [
        float(line.split(",")[3].split("ms")[0])
        for when, line in lines
        if at - 1 <= when < at + 6 and "max latency" in line
    ]
    return {
        "librdkafka_longest_ms": max(waits, default=None),
        "librdkafka_median_partition_ms": round(statistics.median(waits)) if waits else None,
        "librdkafka_per_partition_ms": waits,
        "java_longest_ms": max(java_max, default=None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elections", type=int, default=4)
    parser.add_argument("--rate", type=int, default=500, help="1 KB records/s per producer")
    args = parser.parse_args()
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    results: dict = {**results_header(12), "rate": args.rate, "settings": {}}
    for name, configs in SETTINGS.items():
        results["settings"][name] = one_setting(configs, args.elections, args.rate, jars)
        print(name, results["settings"][name], flush=True)
    print(f"wrote {write_results('leader-change-', results)}")


if __name__ == "__main__":
    main()
