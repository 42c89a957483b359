"""Moving replicas on a real cluster (3 brokers in racks a, b, a, grown to a 4th in rack
b), with an idempotent acks=all producer and a committing consumer group running
through every move; afterwards every acknowledged record is read exactly once and no
replication throttle is left anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import run_cli, seeded, unique, wait_for
from harness.killpoints import choose
from harness.killrun import kill_at_point
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.records import Record
from kmigrate.sandbox import manager
from kmigrate.sandbox.process import is_ours
from kmigrate.sandbox.state import load_state
from tests.integration.conftest import Clusters
from tests.integration.traffic import Group, Traffic

RACKS = ["a", "b", "a", "b"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Started and stopped as a user does (`sandbox up --brokers --racks`, `sandbox
    down`): down stops every broker, the one added later too."""
    directory = tmp_path_factory.mktemp("reassign").resolve()
    up = run_cli("sandbox", "up", "--dir", str(directory), "--cluster", "c", "--brokers", "3",
                 "--racks", ",".join(RACKS[:3]), "--json")  # fmt: skip
    assert up.code == 0, up.stderr
    try:
        yield directory
    finally:
        state = load_state(directory)
        started = [
            (b.pid, directory / "c" / f"broker-{b.node_id}" / "server.properties")
            for b in state.clusters["c"].brokers
        ]
        down = run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes")
    assert down.code == 0, down.stderr
    assert len(started) == 4 and not any(is_ours(pid, props) for pid, props in started)


def test_the_cluster_describes_its_brokers_racks(sandbox: Path) -> None:
    described = run_cli("clusters", "describe", "c", "--json",
                        config=str(sandbox / "clusters.yaml"))  # fmt: skip
    assert described.code == 0, described.stderr
    info = json.loads(described.stdout)
    assert [(b["node_id"], b["rack"]) for b in info["brokers"]][:3] == [
        (1, "a"),
        (2, "b"),
        (3, "a"),
    ]
    assert info["controller_id"] in {b["node_id"] for b in info["brokers"]}


def cli(sandbox: Path, *args: str) -> str:
    done = run_cli(*args, config=str(sandbox / "clusters.yaml"), timeout=240)
    assert done.code == 0, done.stderr[-2000:]
    return done.stdout


def brokers(sandbox: Path) -> dict[int, dict]:
    """`brokers list`, asked again while the cluster blinks (a controller election right
    after a move ends): read-only."""
    found: list[dict] = []

    def listed() -> bool:
        done = run_cli("brokers", "list", "--cluster", "c", "--json",
                       config=str(sandbox / "clusters.yaml"))  # fmt: skip
        if done.code == 0:
            found.append(json.loads(done.stdout))
        return done.code == 0

    wait_for(listed, timeout=60, message="brokers list answering")
    return {b["id"]: b for b in found[-1]["brokers"]}


def replicas_of(sandbox: Path, topic: str) -> dict[int, tuple[int, ...]]:
    with ClusterAdmin(load_settings(sandbox / "clusters.yaml").cluster("c")) as admin:
        return {p.partition: tuple(p.replicas) for p in admin.describe_topic(topic).partitions}


def no_throttles(sandbox: Path) -> None:
    with ClusterAdmin(load_settings(sandbox / "clusters.yaml").cluster("c")) as admin:
        for topic in admin.list_topics(include_internal=True):
            configs = admin.dynamic_configs("topic", topic.name)
            assert not any("throttled" in k for k in configs), (topic.name, configs)
        for broker in admin.describe_cluster().brokers:
            configs = admin.dynamic_configs("broker", str(broker.node_id))
            assert not any("throttled" in k for k in configs), (broker.node_id, configs)


def accounted(sandbox: Path, traffic: Traffic, group: Group, topic: str) -> None:
    traffic.done.set()
    traffic.join(120)
    assert not traffic.failed, traffic.failed[:3]
    group.wait_read(traffic, timeout=90)
    group.done.set()
    group.join(30)
    cluster = load_settings(sandbox / "clusters.yaml").cluster("c")

    with ClusterAdmin(cluster) as admin:
        marks = admin.watermarks(topic)
    values = [
        r.value for w in marks for r in read_partition(cluster, topic, w.partition, 0, w.high)
    ]
    assert len(values) == len(set(values)), "a record was written twice"
    assert set(values) >= traffic.acked


def running(sandbox: Path, topic: str) -> tuple[Traffic, Group]:
    config = load_settings(sandbox / "clusters.yaml").cluster("c").as_librdkafka()
    traffic, group = Traffic(config, topic), Group(config, topic, unique("g-reassign"))
    traffic.start()
    group.start()
    return traffic, group


def test_add_a_broker_drain_one_change_replication_and_apply_a_tool_file(
    sandbox: Path, tmp_path: Path
) -> None:
    topic = unique("moving")
    with ClusterAdmin(load_settings(sandbox / "clusters.yaml").cluster("c")) as admin:
        admin.create_topic(topic, 6, replication_factor=2)
    traffic, group = running(sandbox, topic)
    try:
        manager.up(sandbox, manager.UpRequest(clusters=["c"], brokers=4, racks=RACKS))
        wait_for(lambda: bool(group.seen), timeout=60, message="the group consuming")
        plan = tmp_path / "add.json"
        cli(sandbox, "reassign", "plan", "--cluster", "c", "--add-brokers", "4", "-o", str(plan))
        promised = json.loads(plan.read_text())["kmigrate"]["summary"]["brokers"]
        cli(sandbox, "reassign", "apply", str(plan), "--throttle", "50MB", "--wait")
        spread = brokers(sandbox)
        counts = [b["replicas"] for b in spread.values()]
        assert spread[4]["replicas"] > 0 and max(counts) - min(counts) <= 2, spread
        assert counts == [promised[str(b)]["replicas_after"] for b in sorted(spread)]
        no_throttles(sandbox)

        cli(sandbox, "brokers", "drain", "2", "--cluster", "c", "--yes", "--throttle", "50MB")
        assert brokers(sandbox)[2]["replicas"] == 0, "broker 2 holds no replica at all"
        no_throttles(sandbox)

        rf = tmp_path / "rf.json"
        cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "3",
            "--topics", topic, "-o", str(rf))  # fmt: skip
        cli(sandbox, "reassign", "apply", str(rf), "--throttle", "50MB", "--wait")
        assert all(len(r) == 3 for r in replicas_of(sandbox, topic).values())

        tool = tmp_path / "tool.json"  # what kafka-reassign-partitions writes
        now = replicas_of(sandbox, topic)[0]
        wanted = [now[1], now[2], now[0]]  # a new preferred leader
        entry = {"topic": topic, "partition": 0, "replicas": wanted, "log_dirs": ["any"] * 3}
        tool.write_text(json.dumps({"version": 1, "partitions": [entry]}))
        from_tool = tmp_path / "from-tool.json"
        cli(sandbox, "reassign", "plan", "--cluster", "c", "--from-file", str(tool), "-o",
            str(from_tool))  # fmt: skip
        cli(sandbox, "reassign", "apply", str(from_tool), "--throttle", "50MB", "--wait")
        assert replicas_of(sandbox, topic)[0] == tuple(wanted)
        no_throttles(sandbox)

        cli(sandbox, "brokers", "elect", "--preferred", "--cluster", "c", "--topics", topic)
        with ClusterAdmin(load_settings(sandbox / "clusters.yaml").cluster("c")) as admin:
            partitions = admin.describe_topic(topic).partitions
        assert all(p.leader == p.replicas[0] for p in partitions), partitions
    finally:
        accounted(sandbox, traffic, group, topic)


def _heavy_topic(sandbox: Path, name: str, partitions: int, megabytes: int) -> None:
    cluster = load_settings(sandbox / "clusters.yaml").cluster("c")
    with ClusterAdmin(cluster) as admin:
        admin.create_topic(name, partitions, replication_factor=1)
    payload = os.urandom(100_000)
    records = [
        Record(key=None, value=payload + bytes([i % 256]), partition=i % partitions)
        for i in range(megabytes * 10)
    ]
    produce(cluster, name, records)


def test_a_killed_apply_resumes_and_a_cancel_leaves_no_throttle(
    sandbox: Path, tmp_path: Path
) -> None:
    topic = unique("heavy")
    _heavy_topic(sandbox, topic, 4, 8)  # 8 MB over 4 partitions, one replica each
    traffic, group = running(sandbox, topic)
    try:
        _kill_resume_cancel(sandbox, tmp_path, topic)
    finally:
        accounted(sandbox, traffic, group, topic)


def _kill_resume_cancel(sandbox: Path, tmp_path: Path, topic: str) -> None:
    config = str(sandbox / "clusters.yaml")
    plan = tmp_path / "rf.json"
    cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "2",
        "--topics", topic, "-o", str(plan))  # fmt: skip
    # killed at a step boundary or a random moment after one (the sweep's seeded chooser)
    point = choose(seeded(), ["throttle", "moving 2 partition(s)"], span_s=3.0)
    argv = [sys.executable, "-m", "kmigrate", "--config", config, "reassign", "apply",
            str(plan), "--throttle", "1MB", "--max-moves", "2", "--wait"]  # fmt: skip
    killed = kill_at_point(argv, tmp_path / "apply.log", point, timeout_s=60)
    if killed.exit_code is None:  # else it finished within the random delay
        status = json.loads(cli(sandbox, "reassign", "status", "--cluster", "c", "--json"))
        assert status["state"] == "running", status
        if killed.last and killed.last.startswith("moving"):
            assert status["throttled_brokers"], status
        cli(sandbox, "reassign", "apply", str(plan), "--resume", "--wait")
    assert all(len(r) == 2 for r in replicas_of(sandbox, topic).values())
    no_throttles(sandbox)

    back = tmp_path / "back.json"
    before = replicas_of(sandbox, topic)
    cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "3",
        "--topics", topic, "-o", str(back))  # fmt: skip
    cli(sandbox, "reassign", "apply", str(back), "--throttle", "100KB")
    cancelled = cli(sandbox, "reassign", "cancel", "--cluster", "c", "--yes")
    assert "throttles removed" in cancelled
    no_throttles(sandbox)
    after = {p: set(r) for p, r in replicas_of(sandbox, topic).items()}
    assert after == {p: set(r) for p, r in before.items()}, "a cancel leaves the replicas"


def test_an_apply_rides_through_every_broker_killed_at_a_random_moment(
    sandbox: Path, tmp_path: Path
) -> None:
    """`apply --wait` while every broker is killed -9 at a seeded moment of the move and
    started again: it waits the outage out, says so, and finishes the plan, throttles
    gone, every acknowledged record read exactly once."""
    topic = unique("outage")
    _heavy_topic(sandbox, topic, 4, 8)
    plan = tmp_path / "rf.json"
    cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "2",
        "--topics", topic, "-o", str(plan))  # fmt: skip
    rng = seeded()
    traffic, group = running(sandbox, topic)
    argv = [sys.executable, "-m", "kmigrate", "--config", str(sandbox / "clusters.yaml"),
            "reassign", "apply", str(plan), "--throttle", "2MB", "--max-moves", "2",
            "--wait"]  # fmt: skip
    apply = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(apply.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("partition(s):" in line for line in lines), timeout=60,
                 message=f"the apply starting to move: {lines}")  # fmt: skip
        time.sleep(rng.uniform(0.0, 2.0))  # a random moment of the move, not a condition
        ids = sorted(b.node_id for b in load_state(sandbox).clusters["c"].brokers)
        for node_id in ids:
            manager.stop_broker(sandbox, "c", node_id, kill=True)
        manager.up(sandbox, manager.UpRequest(clusters=["c"], brokers=len(ids),
                                              racks=RACKS[: len(ids)]))  # fmt: skip
        try:
            code = apply.wait(timeout=240)
        except subprocess.TimeoutExpired:
            apply.kill()
            reader.join(10)
            raise AssertionError(f"the apply did not finish in 240 s: {''.join(lines)}") from None
        assert code == 0, "".join(lines)
        reader.join(10)
        said = "".join(lines)
        assert "unavailable since" in said and "available again after" in said, said
        assert all(len(r) == 2 for r in replicas_of(sandbox, topic).values())
        no_throttles(sandbox)
    finally:
        if apply.poll() is None:
            apply.kill()
        accounted(sandbox, traffic, group, topic)


def test_refusals_change_nothing_and_a_dead_brokers_replicas_move(
    sandbox: Path, tmp_path: Path
) -> None:
    settings = load_settings(sandbox / "clusters.yaml")
    topic = unique("strict")
    with ClusterAdmin(settings.cluster("c")) as admin:
        admin.create_topic(topic, 2, replication_factor=2, configs={"min.insync.replicas": "2"})
    config = str(sandbox / "clusters.yaml")

    def refused(code: int, says: str, *args: str) -> None:
        result = run_cli(*args, config=config)
        lines = result.stderr.strip().splitlines()
        assert result.code == code, result.stderr
        assert len(lines) == 1 and says in lines[0], lines

    shrink = tmp_path / "shrink.json"
    cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "1", "--topics",
        topic, "-o", str(shrink))  # fmt: skip
    refused(5, "fewer than its min.insync.replicas 2", "reassign", "apply", str(shrink))
    foreign = tmp_path / "foreign.json"
    body = json.loads(shrink.read_text())
    body["kmigrate"]["cluster_id"] = "SomeOtherClusterId0000"
    foreign.write_text(json.dumps(body))
    refused(5, "made for cluster id SomeOtherClusterId0000", "reassign", "apply", str(foreign))
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1, "partitions": [{"topic": "x"}]}')
    refused(2, "broken.json: partitions[0] has no 'partition'", "reassign", "apply", str(broken))
    before = replicas_of(sandbox, topic)

    # A second reassignment while one is under way.
    grow = tmp_path / "grow.json"
    cli(sandbox, "reassign", "plan", "--cluster", "c", "--replication-factor", "3", "--topics",
        topic, "-o", str(grow))  # fmt: skip
    _heavy_fill(settings, topic)
    cli(sandbox, "reassign", "apply", str(grow), "--throttle", "50KB")
    refused(5, "is already being reassigned", "reassign", "apply", str(grow))
    cli(sandbox, "reassign", "cancel", "--cluster", "c", "--yes")
    assert {p: set(r) for p, r in replicas_of(sandbox, topic).items()} == {
        p: set(r) for p, r in before.items()
    }
    no_throttles(sandbox)

    # A dead broker: refused as a target, its replicas moved off with --fix-offline.
    dead = max(b for r in before.values() for b in r)
    traffic, group = running(sandbox, topic)
    manager.stop_broker(sandbox, "c", dead, kill=True)
    try:

        def seen_dead() -> bool:  # the controller may be electing itself for a moment
            listed = run_cli("brokers", "list", "--cluster", "c", "--json", config=config)
            if listed.code != 0:
                return False
            return not {b["id"]: b for b in json.loads(listed.stdout)["brokers"]}[dead]["alive"]

        wait_for(seen_dead, timeout=60, message=f"broker {dead} seen dead")
        refused(5, f"broker {dead} is not alive", "reassign", "plan", "--cluster", "c",
                "--add-brokers", str(dead), "-o", str(tmp_path / "x.json"))  # fmt: skip
        fix = tmp_path / "fix.json"
        cli(sandbox, "reassign", "plan", "--cluster", "c", "--fix-offline", "--topics", topic,
            "-o", str(fix))  # fmt: skip
        cli(sandbox, "reassign", "apply", str(fix), "--throttle", "50MB", "--wait")
        assert all(dead not in r and len(r) == 2 for r in replicas_of(sandbox, topic).values())
        no_throttles(sandbox)
    finally:
        accounted(sandbox, traffic, group, topic)
        brokers_now = len(
            load_settings(sandbox / "clusters.yaml").cluster("c").bootstrap_servers.split(",")
        )
        manager.up(
            sandbox,
            manager.UpRequest(clusters=["c"], brokers=brokers_now, racks=RACKS[:brokers_now]),
        )


def _heavy_fill(settings: object, topic: str) -> None:
    """A few MB in ``topic`` so a move throttled to KB/s is still running seconds later."""
    payload = os.urandom(100_000)
    produce(
        settings.cluster("c"),
        topic,
        [Record(key=None, value=payload + bytes([i]), partition=i % 2) for i in range(40)],
    )  # type: ignore[attr-defined]


def test_the_byte_copy_reads_from_the_replica_in_its_rack(
    sandbox: Path, clusters: Clusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-392 on this cluster of racks (the sandbox's brokers set replica.selector.class
    to Kafka's RackAwareReplicaSelector): the byte copy told its rack (client.rack: b in
    the source's properties) reads a partition led by broker 1 (rack a) from its follower,
    broker 2 (rack b), which the leader names; without a rack it reads from the leader.
    Both copies are exact."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kmigrate.mirror import byte_copy
    from kmigrate.mirror.ranges import CopySettings, RangePlan

    source = load_settings(sandbox / "clusters.yaml").cluster("c")
    brokers = {b.node_id: ("127.0.0.1", b.port) for b in load_state(sandbox).clusters["c"].brokers}
    sent = [Record(b"k", f"r{i}".encode(), partition=0) for i in range(500)]
    served: dict[tuple[str, int], tuple[str, int]] = {}
    real = byte_copy._ByteCopy.run

    async def spy(self: byte_copy._ByteCopy) -> object:
        try:
            return await real(self)
        finally:
            served.update(self.read_from)

    monkeypatch.setattr(byte_copy._ByteCopy, "run", spy)
    creator = AdminClient(source.as_librdkafka())
    for rack, reader in (("b", 2), (None, 1)):
        topic = unique("racked")
        new = NewTopic(topic, 1, replica_assignment=[[1, 2]], config={"min.insync.replicas": "2"})
        creator.create_topics([new])[topic].result(30)
        produce(source, topic, sent)  # acks=all: the follower holds them too
        with ClusterAdmin(clusters.target) as admin:
            admin.create_topic(topic, 1)
        conf = source.as_librdkafka() | ({"client.rack": rack} if rack else {})
        settings = CopySettings(conf, clusters.target.as_librdkafka())
        (result,) = byte_copy.copy_ranges_as_bytes(settings, [RangePlan(topic, 0, 0, 500, 0, 0)])
        assert result.error is None and result.next_offset == 500, result.error
        assert served[(topic, 0)] == brokers[reader], f"rack {rack}: read from {served}"
        copied = read_partition(clusters.target, topic, 0, 0, 500)
        assert [(r.key, r.value) for r in copied] == [(r.key, r.value) for r in sent]
