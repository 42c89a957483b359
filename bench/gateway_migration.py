"""Partition migrations through a two-instance gateway, under a steady idempotent
producer (acks=all) and a consumer group, both through the gateway.

    .venv/bin/python bench/gateway_migration.py [--rate 1000] [--seconds 8]

Sandbox clusters `origin` and `target` (one broker each, Kafka 4.3.1), a one-server
ZooKeeper ensemble for the gateway, group home `target`, in bench/.work:

(a) smooth: topic `smooth` (8 partitions) on `origin`; after --seconds, partitions 0-3
    move to `target` with `gateway migrate`; --seconds more;
(b) failover: topic `failover` (8 partitions) on `origin`; after --seconds the origin's
    broker is killed (-9), all 8 partitions fail over to `target`; --seconds later the
    origin starts again and the aging timer names what it could not serve;
(c) the guided migration of `kmigrate demo` at --demo-rate records/s, twice: the producer
    stopped by hand for promote (today's way), then `--via-gateway` (it never stops).

For each: failed sends, the longest produce pause on the moved partitions (the longest
time without an acknowledgement while records were being sent), the producer's p99
acknowledgement latency before and during the move, and from the consumer's side the
acknowledged records never read and the records read twice. The comparison the issue
names: today's guided promote stops producers by hand for 4.2 s. Results:
bench/results/gateway-migration-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from itertools import pairwise
from typing import Any

import yaml
from common import WORK, results_header, write_results
from confluent_kafka import Consumer, Producer

from kmigrate.config import load_settings
from kmigrate.demo.scenario import Screen, run_demo
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.net import free_ports
from kmigrate.sandbox import manager

PARTITIONS = 8
GUIDED_PROMOTE_PAUSE_S = 4.2  # README "Guided migration": producers stopped by hand


class Load:
    """A producer at a steady rate and a group reading, through the gateway."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self.topic, self.rate = topic, rate
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
             "message.timeout.ms": 120_000, "topic.metadata.refresh.interval.ms": 2000}
        )  # fmt: skip
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}",
             "auto.offset.reset": "earliest", "enable.auto.commit": True,
             "topic.metadata.refresh.interval.ms": 2000}
        )  # fmt: skip
        self.consumer.subscribe([topic])
        self.acks: list[tuple[float, float, int, bytes]] = []  # sent, acked, partition, value
        self.failed: list[str] = []
        self.read: list[tuple[int, int, bytes]] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._produce),
            threading.Thread(target=self._consume),
        ]

    def _acked(self, sent: float, error: Any, message: Any) -> None:
        if error is None:
            self.acks.append((sent, time.monotonic(), message.partition(), message.value()))
        else:
            self.failed.append(str(error))

    def _produce(self) -> None:
        n, start = 0, time.monotonic()
        while not self.stop.is_set():
            due = start + n / self.rate
            if time.monotonic() < due:
                self.producer.poll(min(0.005, due - time.monotonic()))
                continue
            value = f"{self.topic}-{n}".encode()
            self.producer.produce(self.topic, value, partition=n % PARTITIONS,
                                  on_delivery=partial(self._acked, time.monotonic()))  # fmt: skip
            n += 1
        self.producer.flush(120)

    def _consume(self) -> None:
        while not self.stop.is_set() or time.monotonic() < self.drain_until:
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    self.read.append((m.partition(), m.offset(), m.value()))
        self.consumer.close()

    drain_until = 0.0

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self, drain_s: float = 20.0) -> None:
        self.drain_until = time.monotonic() + drain_s
        self.stop.set()
        self.threads[0].join(150)
        acked = {v for *_, v in self.acks}
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline and not acked <= {v for *_, v in self.read}:
            time.sleep(0.2)
        self.drain_until = 0.0
        self.threads[1].join(30)


def _p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(load: Load, moved: set[int], start: float, end: float, lost_ok: set[bytes]) -> dict:
    """The numbers of one scenario; [start, end] is the move (command or outage)."""
    on_moved = [a for a in load.acks if a[2] in moved]
    before = [acked - sent for sent, acked, _, _ in on_moved if sent < start - 1.0]
    during = [acked - sent for sent, acked, _, _ in on_moved if start - 0.5 <= sent <= end + 0.5]
    times = sorted(acked for _, acked, _, _ in on_moved)
    gaps = [b - a for a, b in pairwise(times) if a >= start - 2.0]
    read_values = [v for _, _, v in load.read]
    by_offset: dict[tuple[int, int], bytes] = {}
    jumped = 0
    for p, offset, value in load.read:
        if by_offset.setdefault((p, offset), value) != value:
            jumped += 1
    acked_values = {v for *_, v in load.acks}
    lost = acked_values - set(read_values)
    return {
        "records_acked": len(load.acks),
        "failed_sends": len(load.failed),
        "move_s": round(end - start, 3),
        "longest_produce_pause_s": round(max(gaps, default=0.0), 3),
        "p99_ack_ms_before": round(1000 * (_p99(before) or 0), 1),
        "p99_ack_ms_during": round(1000 * (_p99(during) or 0), 1),
        "max_ack_ms_during": round(1000 * max(during, default=0.0), 1),
        "acked_not_read": len(lost - lost_ok),
        "acked_not_read_named_unavailable": len(lost & lost_ok),
        "read_twice": len(read_values) - len(set(read_values)),
        "offsets_naming_two_records": jumped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="records/s (100 B)")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--demo-rate", type=float, default=500.0, help="records/s, (c)")
    parser.add_argument("--only", choices=("all", "guided"), default="all",
                        help="guided: scenario (c) alone")  # fmt: skip
    args = parser.parse_args()
    if args.only == "guided":
        _guided_only(args.demo_rate)
        return

    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(
        directory, manager.UpRequest(clusters=["origin", "target"], ensembles=["gw"], nodes=1)
    )
    gateways: list[subprocess.Popen] = []
    try:
        body = yaml.safe_load((directory / "clusters.yaml").read_text())
        body["gateway"] = {"group_home": "target", "zookeeper": "gw", "age_every_s": 1}
        body["store"] = {"url": f"sqlite:///{WORK / 'kmigrate.db'}"}
        config = directory / "gateway.yaml"
        config.write_text(yaml.safe_dump(body))
        settings = load_settings(config)
        kmigrate = [sys.executable, "-m", "kmigrate", "--config", str(config), "gateway"]
        ports = free_ports(2)
        for node, port in zip((1, 2), ports, strict=True):
            log = open(WORK / f"gateway-{node}.log", "ab")  # noqa: SIM115
            gateways.append(subprocess.Popen(
                [*kmigrate, "start", "--listen", f"127.0.0.1:{port}", "--id", str(node)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))  # fmt: skip
        ensemble = settings.ensemble("gw")
        registry = Registry(ensemble.connect, "/kmigrate-gateway", "gw")
        deadline = time.monotonic() + 60
        while len(registry.instances()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
        with ClusterAdmin(settings.cluster("origin")) as admin:
            for topic in ("smooth", "failover"):
                admin.create_topic(topic, PARTITIONS)
        for topic in ("smooth", "failover"):
            subprocess.run([*kmigrate, "route", "set", "--topic", topic, "--cluster", "origin"],
                           check=True, capture_output=True)  # fmt: skip
        results: dict = {**results_header(PARTITIONS), "rate": args.rate, "scenarios": {}}
        run = Run(kmigrate, bootstrap, args.rate, args.seconds, directory, settings, registry)
        results["scenarios"]["smooth"] = run.smooth()
        print("smooth", json.dumps(results["scenarios"]["smooth"], indent=2), flush=True)
        results["scenarios"]["failover"] = run.failover()
        print("failover", json.dumps(results["scenarios"]["failover"], indent=2), flush=True)
        registry.close()
    finally:
        for proc in gateways:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
        manager.down(directory, purge=True, grace=10)
    results["scenarios"]["guided_promote"] = guided(args.demo_rate)
    print("guided", json.dumps(results["scenarios"]["guided_promote"], indent=2), flush=True)
    results["guided_promote_pause_s_readme"] = GUIDED_PROMOTE_PAUSE_S
    print(f"wrote {write_results('gateway-migration-', results)}")


def _guided_only(rate: float) -> None:
    results = {**results_header(PARTITIONS), "demo_rate": rate, "scenarios": {}}
    results["scenarios"]["guided_promote"] = guided(rate)
    print("guided", json.dumps(results["scenarios"]["guided_promote"], indent=2), flush=True)
    print(f"wrote {write_results('gateway-migration-', results, '-guided')}")


class Run:
    def __init__(
        self, kmigrate: list[str], bootstrap: str, rate: int, seconds: float,
        directory: Any, settings: Any, registry: Registry,
    ) -> None:  # fmt: skip
        self.kmigrate, self.bootstrap, self.rate, self.seconds = kmigrate, bootstrap, rate, seconds
        self.directory, self.settings, self.registry = directory, settings, registry

    def _migrate(self, *args: str) -> dict:
        done = subprocess.run([*self.kmigrate, "migrate", "--cluster", "target", "--json", *args],
                              check=False, capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def smooth(self) -> dict:
        load = Load(self.bootstrap, "smooth", self.rate)
        load.start()
        time.sleep(self.seconds)
        start = time.monotonic()
        moved = self._migrate("--topic", "smooth", "--partitions", "0,1,2,3")
        end = time.monotonic()
        time.sleep(self.seconds)
        load.finish()
        row = measure(load, {0, 1, 2, 3}, start, end, set())
        return {**row, "fence_ms": moved["moved"][0]["fence_ms"]}

    def failover(self) -> dict:
        load = Load(self.bootstrap, "failover", self.rate)
        load.start()
        time.sleep(self.seconds)
        broker = manager.load_state(self.directory).clusters["origin"].brokers[0].node_id
        start = time.monotonic()
        manager.stop_broker(self.directory, "origin", broker, kill=True)
        self._migrate("--topic", "failover", "--mode", "failover",
                      "--partitions", ",".join(map(str, range(PARTITIONS))))  # fmt: skip
        end = time.monotonic()
        time.sleep(self.seconds)
        manager.up(self.directory, manager.UpRequest(clusters=["origin"]))
        records = _finalised(self.registry, "failover")
        load.finish()
        unavailable = _unavailable(self.settings.cluster("origin"), records)
        row = measure(load, set(range(PARTITIONS)), start, end, unavailable)
        ranges = {p: m.unavailable for p, m in records.items() if m.unavailable}
        return {**row, "unavailable_ranges": ranges}


def guided(rate: float) -> dict:
    """(c): the guided migration of the demo, producers stopped by hand for promote
    (today's way) and through the gateway (`--via-gateway`), one after the other."""
    found = {}
    for label, via in (("stopped_by_hand", False), ("via_gateway", True)):
        screen = _Noted()
        result = run_demo(WORK / f"demo-{label}", screen, rate=rate, via_gateway=via)
        found[label] = {
            "records": result.produced,
            "failed_sends": result.failed_sends,
            "producer_pause_s": round(result.producer_pause_s, 3),
            "promote_s": round(result.promote_s, 3),
            "not_consumed": len(result.missing),
            "consumed_twice": len(result.duplicates),
            "verify": bool(result.verify and result.verify.ok),
        }
        if via:  # where the held writes' time went, as promote reported it
            found[label]["writes_held"] = next(
                (line.split("; ", 1)[-1] for line in screen.lines if "writes held" in line), None
            )
        manager.down(WORK / f"demo-{label}", purge=True, grace=10)
    return found


class _Noted(Screen):
    """The demo's progress lines, kept."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def progress(self, text: str) -> None:
        self.lines.append(text)


def _finalised(registry: Registry, topic: str, timeout_s: float = 60.0) -> dict[int, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        route = registry.read_routes().topics[topic]
        records = {p: chain[-1] for p, chain in route.migrations.items()}
        if all(m.origin_end is not None for m in records.values()) or time.monotonic() > deadline:
            return records
        time.sleep(0.5)


def _unavailable(origin: Any, records: dict[int, Any]) -> set[bytes]:
    found: set[bytes] = set()
    for p, m in records.items():
        if m.unavailable:
            first, end = m.unavailable
            found |= {r.value for r in read_partition(origin, "failover", p, first, end)}
    return found


if __name__ == "__main__":
    main()
