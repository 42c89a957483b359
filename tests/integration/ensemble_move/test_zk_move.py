"""A whole ZooKeeper move under traffic, with `zk migrate` killed (SIGKILL) in the join,
the check, the switch and the split, and resumed each time by running it again. Each kill
is at a step boundary of its phase or a random moment after one, drawn by the kill-point
sweep's seeded chooser (harness/killpoints.py; seed printed, replay with KMIGRATE_TEST_SEED).

A sandbox of its own: ensembles `old` (servers 1-3, holding Kafka under /kafka) and
`new` (4-6, empty), and a 2-broker ZooKeeper-mode Kafka 3.9 cluster `legacy` on
old/kafka. While the move runs: an idempotent acks=all producer, a consumer group that
commits as it goes, and a plain ZooKeeper client with a session on `old` that keeps
writing its own path there.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from harness.helpers import run_cli, seeded, unique
from harness.killpoints import choose
from harness.killrun import kill_at_point
from harness.zookeeper_client import OtherClient
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.ensemble_move.plan import load_plan
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.model.cluster import AclEntry
from kmigrate.sandbox.state import load_state
from tests.integration.ensemble_move.conftest import old_and_new
from tests.integration.traffic import Group, Traffic


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with old_and_new(tmp_path_factory, "zkmove", brokers=2) as directory:
        yield directory


def _migrate(config: Path, plan: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "zk", "migrate",
             str(plan), *extra],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


# each phase's step boundaries (progress lines) a kill is drawn from, and how long a
# random kill may wait after one without leaving the phase
PHASES = {
    "join": (["phase join", "join: servers", "join: reconfig"], 3.0),
    "check": (["phase check"], 0.5),
    # a random kill may land inside a broker's restart: the resume waits for it
    # (bench/killpoints.py --operation zk --seed 3102 found a resume that did not)
    "switch": (["phase switch", "switch: restarting broker", "switch: broker"], 6.0),
    "split": (["phase split", "split: reconfig", "split: servers"], 2.0),
}


def _kill_during(config: Path, plan: Path, log: Path, phase: str, rng: random.Random) -> None:
    """Run `zk migrate`, SIGKILL it (and the commands it runs) at a boundary of ``phase``
    or a random moment after one."""
    marks, span = PHASES[phase]
    point = choose(rng, marks, span)
    argv = [sys.executable, "-m", "kmigrate", "--config", str(config), "zk", "migrate", str(plan)]
    kill_at_point(argv, log, point, timeout_s=180)


def _guarded_topic(kafka: ClusterConfig, topic: str) -> None:
    """A topic whose configs User:ANONYMOUS may not alter: who may do what must not
    change (the brokers read their ACLs from the ensemble they run on)."""
    with ClusterAdmin(kafka) as admin:
        admin.create_topic(topic, 2, replication_factor=2)
        admin.create_acls([
            AclEntry("TOPIC", topic, "LITERAL", "User:ANONYMOUS", "*", "ALL", "ALLOW"),
            AclEntry("TOPIC", topic, "LITERAL", "User:ANONYMOUS", "*", "ALTER_CONFIGS", "DENY"),
        ])  # fmt: skip


def test_a_move_under_traffic_killed_in_every_phase_ends_exactly(
    sandbox: Path, tmp_path: Path
) -> None:
    config = sandbox / "clusters.yaml"
    settings = load_settings(config)
    kafka = settings.cluster("legacy")
    topic, group = unique("zkmove"), unique("g-zkmove")
    _guarded_topic(kafka, topic)
    plan_file = tmp_path / "move.yaml"
    planned = run_cli(
        "zk", "plan", "--cluster", "legacy", "--source-ensemble", "old",
        "--target-ensemble", "new", "-o", str(plan_file), config=str(config),
    )  # fmt: skip
    assert planned.code == 0, planned.stderr
    plan = load_plan(plan_file)

    traffic = Traffic(kafka.as_librdkafka(), topic)
    consumer = Group(kafka.as_librdkafka(), topic, group)
    other = OtherClient(settings.ensemble("old").connect)
    for thread in (traffic, consumer, other):
        thread.start()
    log = tmp_path / "migrate.log"
    try:
        rng = seeded()
        for phase in PHASES:
            _kill_during(config, plan_file, log, phase, rng)
        last = _migrate(config, plan_file, log)
        assert last.wait(300) == 0, log.read_text()[-3000:]
    finally:
        traffic.done.set()
        traffic.join(150)
    assert not traffic.failed, traffic.failed[:3]

    # Every acknowledged record is in the log exactly once, and the group read them all.
    with ClusterAdmin(kafka) as admin:
        marks = admin.watermarks(topic)
    values = [r.value for w in marks for r in read_partition(kafka, topic, w.partition, 0, w.high)]
    traffic.check_stored(values)
    consumer.wait_read(traffic, timeout=60)
    consumer.done.set()
    other.done.set()
    consumer.join(30)
    other.join(30)

    # Kafka runs on `new` alone; `old` serves its other client, whose session never expired.
    state = load_state(sandbox)
    connect = f"{state.ensembles['new'].connect}/kafka"
    for broker in state.clusters["legacy"].brokers:
        props = (sandbox / "legacy" / f"broker-{broker.node_id}" / "server.properties").read_text()
        assert f"zookeeper.connect={connect}\n" in props
    assert plan.target_connect == connect
    assert KazooState.LOST not in other.states, other.states
    assert other.zk.client_id is None or other.session == other.zk.client_id[0]
    assert other.writes > 50, "the other client kept writing to old"
    _assert_split(settings.ensemble("old").connect, settings.ensemble("new").connect)
    _assert_recorded(config)
    _cleanup_removes_each_sides_leftovers(config)
    other.zk.stop()
    other.zk.close()


def _assert_recorded(config: Path) -> None:
    """The move is done; its history shows Kafka's tree compared znode by znode, and the
    killed runs' lock taken over."""
    status = run_cli("zk", "status", "--cluster", "legacy", config=str(config))
    assert "phase reached: done" in status.stdout, status.stdout + status.stderr
    history = run_cli("zk", "history", "--cluster", "legacy", "--json", config=str(config))
    events = json.loads(history.stdout)["events"]
    (checked,) = [e for e in events if e["phase"] == "check" and "identical" in e["step"]]
    assert "identical on servers 1 and 4" in checked["step"], checked
    assert int(checked["detail"].split()[0]) > 20, "Kafka's znodes compared one by one"
    assert any(e["phase"] == "lock" for e in events), "the killed runs' lock taken over"
    (probed,) = [e for e in events if e["step"] == "authorization" and e["phase"] == "baseline"]
    assert '"denied (TOPIC_AUTHORIZATION_FAILED)"' in probed["detail"], probed
    unchanged = {e["phase"] for e in events if e["step"] == "authorization unchanged"}
    assert unchanged == {"join", "check", "switch", "split"}, unchanged


def _cleanup_removes_each_sides_leftovers(config: Path) -> None:
    """Kafka's stale copy goes from old, old's other client's copy from new."""
    settings = load_settings(config)
    cleaned = run_cli("zk", "cleanup", "--cluster", "legacy", "--yes", "--json", config=str(config))
    assert cleaned.code == 0, cleaned.stderr
    assert json.loads(cleaned.stdout)["deleted"] == {"old": ["/kafka"], "new": ["/app"]}
    assert server_ids_and_root(settings.ensemble("old").connect)[1] == ["app", "zookeeper"]
    assert server_ids_and_root(settings.ensemble("new").connect)[1] == ["kafka", "zookeeper"]


def server_ids_and_root(connect: str) -> tuple[set[str], list[str]]:
    """The server ids an ensemble answers for, and its top-level znodes."""
    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    try:
        config = zk.get("/zookeeper/config")[0].decode()
        ids = {
            line.split("=")[0].split(".")[1]
            for line in config.splitlines()
            if line.startswith("server.")
        }
        return ids, sorted(zk.get_children("/"))
    finally:
        zk.stop()
        zk.close()


def _assert_split(old: str, new: str) -> None:
    """Each side answers for its own servers; the new one holds Kafka's registrations."""
    assert server_ids_and_root(old)[0] == {"1", "2", "3"}
    assert server_ids_and_root(new)[0] == {"4", "5", "6"}
    zk = KazooClient(hosts=new)
    zk.start(timeout=15)
    try:
        assert sorted(zk.get_children("/kafka/brokers/ids")) == ["1", "2"]
    finally:
        zk.stop()
        zk.close()
    zk = KazooClient(hosts=old)
    zk.start(timeout=15)
    try:
        assert zk.exists("/app/alive"), "the other client's ephemeral node survived"
    finally:
        zk.stop()
        zk.close()
