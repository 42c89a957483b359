"""Faults behind and in the gateway, with an idempotent producer and a committing group
running through it the whole time:

* a backend cluster (its only broker) stops: its partitions get retriable errors while
  the other backend's keep flowing, and everything resumes when it is back;
* a gateway instance is killed with -9: it drops out within its ZooKeeper session and
  the clients carry on through the other one.

Every acknowledged record is read exactly once. A gateway and a third cluster (`extra`)
of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.sandbox import manager
from tests.helpers import unique, wait_for
from tests.integration.conftest import Clusters
from tests.integration.gateway.conftest import Gateway, running_gateway
from tests.integration.gateway.traffic import Reader, Traffic, route


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
