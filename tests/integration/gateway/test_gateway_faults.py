"""Faults behind and in the gateway, with an idempotent producer and a committing group
running through it the whole time:

* a backend cluster (its only broker) stops: its partitions get retriable errors while
  the other backend's keep flowing, and everything resumes when it is back;
* a gateway instance is killed with -9: it drops out within its ZooKeeper session and
  the clients carry on through the other one.

Every acknowledged record is read exactly once. A gateway and a third cluster (`extra`)
of its own."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import Gateway, running_gateway
from harness.gateway_traffic import Reader, Traffic, read_once, route, routed_topic
from harness.helpers import run_cli, seeded, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.gateway.control.command import MoveRequest, move
from kmigrate.gateway.control.marks import MARK_EVERY_S
from kmigrate.gateway.control.shared_state import setup_of
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from tests.integration.conftest import Clusters
from tests.integration.gateway.verifiable import (
    check_accounted,
    java_consumer,
    java_epochs,
    java_producer,
    wait_read,
)


@pytest.fixture(scope="module")
def faulty(
    clusters: Clusters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Gateway, Path]]:
    folder = tmp_path_factory.mktemp("gateway-faults").resolve()
    manager.up(folder / "extra", manager.UpRequest(clusters=["extra"]))
    try:
        extra = folder / "extra" / "clusters.yaml"
        with running_gateway(clusters.config_path, folder, extra) as gw:
            yield gw, folder / "extra"
    finally:
        manager.down(folder / "extra", purge=True, grace=5)


def _stored(config: Any, topic: str) -> list[bytes]:
    with ClusterAdmin(config) as admin:
        marks = admin.watermarks(topic)
    return [r.value for w in marks for r in read_partition(config, topic, w.partition, 0, w.high)]


def test_a_backend_down_stalls_only_its_partitions_and_an_instance_killed_drops_out(
    clusters: Clusters, faulty: tuple[Gateway, Path]
) -> None:
    gw, extra_dir = faulty
    settings = load_settings(gw.config)
    fragile, steady = unique("gw-fragile"), unique("gw-steady")
    with ClusterAdmin(settings.cluster("extra")) as admin:
        admin.create_topic(fragile, 2)
    with ClusterAdmin(clusters.target) as admin:
        admin.create_topic(steady, 2)
    route(gw, fragile, "extra")
    route(gw, steady, "target")
    # the group home holds no copy of `fragile`'s data, only its committed offsets
    traffic, reader = (
        Traffic(gw.bootstrap, [fragile, steady]),
        Reader(gw.bootstrap, [fragile, steady]),
    )
    traffic.start()
    reader.start()
    try:
        wait_for(lambda: traffic.count(fragile) > 200, timeout=60, message="traffic flowing")

        manager.down(extra_dir, ["extra"], grace=5)  # the backend goes away
        down_at = time.monotonic()
        before = traffic.count(steady)
        wait_for(
            lambda: traffic.count(steady) > before + 300,
            timeout=30,
            message="the other backend's partitions flowing while `extra` is down",
        )
        stalled = [t for _, t in traffic.acked[fragile] if t > down_at + 1.0]
        assert not stalled, "records acked on a stopped backend"
        manager.up(extra_dir, manager.UpRequest(clusters=["extra"]))
        back = traffic.count(fragile)
        wait_for(lambda: traffic.count(fragile) > back + 200, timeout=90,
                 message="`extra`'s partitions flowing again")  # fmt: skip

        gw.kill(1)  # kill -9 of one instance, clients keep going through the other
        wait_for(lambda: gw.registered() == {2}, timeout=30, message="instance 1 dropped out")
        after = {t: traffic.count(t) for t in (fragile, steady)}
        wait_for(
            lambda: all(traffic.count(t) > after[t] + 200 for t in after),
            timeout=90,
            message="both topics flowing through instance 2 alone",
        )
    finally:
        traffic.done.set()
        traffic.join(200)
    assert not traffic.failed, traffic.failed[:3]
    # A sequence gap the gateway made (one write of a partition refused, the next one
    # forwarded) makes the client bump its epoch and renumber every unacknowledged
    # record, possibly written ones too: the way to duplicates, even when none happen.
    assert traffic.producer_ids == 1, "the producer bumped its epoch (a sequence gap)"
    acked = traffic.values()
    wait_for(
        lambda: set(reader.seen) >= acked, timeout=90, message="the group read every acked record"
    )
    reader.done.set()
    reader.join(30)
    for config, topic in ((settings.cluster("extra"), fragile), (clusters.target, steady)):
        stored = _stored(config, topic)
        assert len(stored) == len(set(stored)), f"a record of {topic} was written twice"
        assert {v for v, _ in traffic.acked[topic]} <= set(stored)
    gw.start(1)  # back for whoever comes next


def _migrations(gw: Gateway, topic: str) -> dict[int, dict[str, Any]]:
    listed = run_cli("gateway", "migrations", "--json", config=str(gw.config))
    assert listed.code == 0, listed.stderr
    return {
        r["partition"]: r for r in json.loads(listed.stdout)["migrations"] if r["topic"] == topic
    }


def _unread(reader: Reader, expected: set[bytes], partition_of: dict[bytes, int]) -> str:
    """What the group has not read yet, by partition, and where it is reading."""
    missing = expected - set(reader.seen)
    by_partition: dict[int, int] = {}
    for value in missing:
        by_partition[partition_of[value]] = by_partition.get(partition_of[value], 0) + 1
    reached: dict[int, int] = {}
    for _, p, offset, _ in reader.offsets:
        reached[p] = max(reached.get(p, -1), offset)
    return (
        f"the group read every acked record the migration serves: {len(missing)} unread "
        f"by partition {by_partition}, e.g. {sorted(missing)[:3]}; last offsets read {reached}"
    )


def test_failover_when_the_origin_dies_and_no_offset_jumps_when_it_returns(
    clusters: Clusters, faulty: tuple[Gateway, Path]
) -> None:
    """Seed 000's failover: `extra` dies under load; partition 0 fails over keeping the
    origin's records (they are read once it is back), partition 1 ignoring them. The
    records the origin acknowledged after the last high watermark the gateway recorded
    are named as unavailable, never served at offsets that belong to other records."""
    gw, extra_dir = faulty
    extra = load_settings(gw.config).cluster("extra")
    topic = routed_topic(gw, extra, "gw-failover", 2)
    traffic, reader = Traffic(gw.bootstrap, [topic]), Reader(gw.bootstrap, [topic])
    traffic.start()
    reader.start()
    try:
        wait_for(lambda: len(reader.seen) > 300, timeout=60, message="traffic read")
        broker = manager.load_state(extra_dir).clusters["extra"].brokers[0].node_id
        manager.stop_broker(extra_dir, "extra", broker, kill=True)  # the origin dies (-9)
        for partition, flags in (("0", []), ("1", ["--ignore-origin"])):
            done = run_cli("gateway", "migrate", "--topic", topic, "--partitions", partition,
                           "--cluster", "target", "--mode", "failover", *flags,
                           config=str(gw.config))  # fmt: skip
            assert done.code == 0, done.stderr
        before = traffic.count(topic)
        wait_for(lambda: traffic.count(topic) > before + 300, timeout=90,
                 message="writes flowing on the target")  # fmt: skip
        manager.up(extra_dir, manager.UpRequest(clusters=["extra"]))  # the origin returns
        records = wait_for(
            lambda: (
                (m := _migrations(gw, topic))
                and all(r["origin_end"] is not None for r in m.values())
                and m
            ),
            timeout=60,
            message="the timer recorded the origin's real end",
        )
    finally:
        traffic.done.set()
        traffic.join(200)
    assert not traffic.failed, traffic.failed[:3]

    ends = {p: r["end_offset"] for p, r in records.items()}
    unavailable = {
        p: set(_values(extra, topic, p, *r["unavailable"])) if r["unavailable"] else set()
        for p, r in records.items()
    }
    skipped = set(_values(extra, topic, 1, 0, ends[1]))  # partition 1 ignores its origin
    acked = traffic.values()
    expected = acked - unavailable[0] - unavailable[1] - skipped
    wait_for(lambda: set(reader.seen) >= expected, timeout=90,
             message=lambda: _unread(reader, expected, traffic.partition_of))  # fmt: skip
    reader.done.set()
    reader.join(30)
    by_offset = read_once(reader)
    # A write in flight when the origin died may be on it (unanswered) and, retried, on
    # the target too: that copy is served at the target's offset, the origin's never.
    retried = set(_stored(clusters.target, topic))
    assert not set(by_offset.values()) & (unavailable[0] | unavailable[1]) - retried
    offsets0 = {o for (p, o) in by_offset if p == 0}
    assert offsets0 == set(range(max(offsets0) + 1)), "a gap in partition 0"
    assert all(traffic.partition_of[v] == p for (p, _), v in by_offset.items())


def test_a_consumer_at_the_end_reads_nothing_a_failover_at_a_random_moment_renumbers(
    faulty: tuple[Gateway, Path],
) -> None:
    """A group reads right at the end of four partitions while a producer writes; the
    origin dies (-9) at a random moment between two stores of the instances' high
    watermarks, and the partitions fail over at once (in process, well within a store's
    period), ignoring the origin. Every offset the group read names the same record
    through the gateway afterwards: no answer carried a record (or a high watermark)
    beyond the marks stored, which is where the failover starts the target's offsets."""
    rng = seeded()
    gw, extra_dir = faulty
    settings = load_settings(gw.config)
    topic = routed_topic(gw, settings.cluster("extra"), "gw-marks", 4)
    traffic, reader = Traffic(gw.bootstrap, [topic]), Reader(gw.bootstrap, [topic])
    traffic.start()
    reader.start()
    moved: list[Any] = []
    try:
        wait_for(lambda: len(reader.seen) > 400, timeout=60, message="traffic read")
        time.sleep(rng.uniform(0, MARK_EVERY_S))  # the fault's random moment, not a wait
        broker = manager.load_state(extra_dir).clusters["extra"].brokers[0].node_id
        manager.stop_broker(extra_dir, "extra", broker, kill=True)
        asked = MoveRequest(topic, [0, 1, 2, 3], "target", "failover", ignore_origin=True)
        moved = move(settings, setup_of(settings, None), asked, lambda _m: None)
        read_at_kill = max(o for _, _, o, _ in reader.offsets)
        wait_for(lambda: max(o for _, _, o, _ in reader.offsets) > read_at_kill + 300,
                 timeout=90, message="the group reading on the target")  # fmt: skip
    finally:
        traffic.done.set()
        traffic.join(200)
        reader.done.set()
        reader.join(30)
        manager.up(extra_dir, manager.UpRequest(clusters=["extra"]))  # for the next test
    ends = {m.partition: m.end_offset for m in moved}
    print("stored marks the failover started at:", ends)
    by_offset = read_once(reader)
    through = ClusterConfig(name="gateway", bootstrap_servers=gw.bootstrap)
    for p, end in ends.items():
        read = {o: v for (q, o), v in by_offset.items() if q == p and o >= end}
        if not read:
            continue
        now = {r.offset: r.value for r in read_partition(through, topic, p, end, max(read) + 1)}
        jumped = sorted(o for o, v in read.items() if now.get(o) != v)
        assert not jumped, f"{topic}[{p}]: offsets {jumped[:5]}... name other records now"


def _values(config: Any, topic: str, partition: int, start: int, end: int) -> list[bytes]:
    return [r.value for r in read_partition(config, topic, partition, start, end)]


def test_the_first_producer_of_a_backend_still_loading_neither_stalls_nor_misreports(
    faulty: tuple[Gateway, Path], tmp_path: Path
) -> None:
    """Kafka's Java producer (5 requests in flight) starts while `extra`'s broker is down
    and comes back: its first batches are refused, the backend's producer ids are not
    ready (COORDINATOR_LOAD_IN_PROGRESS) for a moment, later batches are ready first.
    Nothing may be written out of order, reported failed, or make it bump its epoch."""
    gw, extra_dir = faulty
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    topic = routed_topic(gw, load_settings(gw.config).cluster("extra"), "gw-first", 3)
    broker = manager.load_state(extra_dir).clusters["extra"].brokers[0].node_id
    manager.stop_broker(extra_dir, "extra", broker, kill=True)
    producer, produced = java_producer(jars, gw.bootstrap, topic, tmp_path, rate=500, keys=30)
    consumer, consumed = java_consumer(jars, gw.bootstrap, topic, unique("gw-first"), tmp_path)
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(producer.kill)
        cleanup.callback(consumer.kill)
        producer.start()
        try:
            wait_for(lambda: "ProducerId set to" in producer.log.read_text(), timeout=60,
                     message="the producer has its id (from the group home)")  # fmt: skip
            manager.up(extra_dir, manager.UpRequest(clusters=["extra"]))
            wait_for(lambda: produced.count() > 2000 or not producer.alive(), timeout=120,
                     message="records acknowledged once `extra` is back")  # fmt: skip
        finally:
            producer.stop()
        consumer.start()
        wait_read(consumed, produced)
        consumer.stop()
    check_accounted(produced, consumed.records)
    assert len(java_epochs(producer)) == 1, java_epochs(producer)
