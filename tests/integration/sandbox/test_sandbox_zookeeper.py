"""Real ZooKeeper ensembles and ZooKeeper-mode Kafka in the sandbox, used as a user does:
`kmigrate sandbox up --zookeeper`, `status`, `down`. A sandbox of its own (it kills a
ZooKeeper node)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from kazoo.client import KazooClient

from harness.helpers import interruptible, run_cli, seeded, unique, wait_for
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.records import Record
from kmigrate.sandbox.process import is_running, processes_naming, stop_processes
from kmigrate.sandbox.state import load_state


def _status(directory: Path) -> tuple[int, dict]:
    result = run_cli("sandbox", "status", "--dir", str(directory), "--json")
    return result.code, json.loads(result.stdout)


def test_an_ensemble_with_reconfig_and_a_zookeeper_mode_cluster_on_it(tmp_path: Path) -> None:
    directory = tmp_path / "sb"
    up = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk", "--json")
    assert up.code == 0, up.stderr
    try:
        connect = json.loads(up.stdout)["zookeeper"]["zk"]["connect"]
        assert len(connect.split(",")) == 3 and all(
            h.startswith("127.0.0.1:") for h in connect.split(",")
        )
        code, status = _status(directory)
        assert code == 0
        assert sorted(n["mode"] for n in status["zookeeper"]) == ["follower", "follower", "leader"]

        # Kafka 3.9.1 in ZooKeeper mode, under a chroot of that ensemble.
        cluster_up = run_cli(
            "sandbox", "up", "--dir", str(directory), "--cluster", "legacy",
            "--zookeeper", "zk/kafka", "--json", timeout=600,
        )  # fmt: skip
        assert cluster_up.code == 0, cluster_up.stderr
        info = json.loads(cluster_up.stdout)["clusters"]["legacy"]
        assert info["kafka_version"] == "3.9.1"
        assert info["zookeeper_connect"] == f"{connect}/kafka"

        _check_cluster_on_the_ensemble(directory, connect)
        _broker_killed_then_up_again(directory, connect)
        _node_killed_then_restarted(directory)

        # A second ensemble gets server ids of its own (a move joins one to the other).
        other = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "other",
                        "--nodes", "1")  # fmt: skip
        assert other.code == 0, other.stderr
        ids = {
            e: [n.node_id for n in x.nodes]
            for e, x in load_state(directory.resolve()).ensembles.items()
        }
        assert ids == {"zk": [1, 2, 3], "other": [4]}

        refused = run_cli(
            "sandbox", "up", "--dir", str(directory), "--cluster", "new",
            "--zookeeper", "zk", "--kafka-version", "4.3.1",
        )  # fmt: skip
        assert refused.code == 2
        assert refused.stderr.strip().startswith("error: Kafka 4.3.1 has no ZooKeeper mode")
        assert "new" not in load_state(directory.resolve()).clusters
    finally:
        state = load_state(directory.resolve())
        pids = [n.pid for e in state.ensembles.values() for n in e.nodes]
        down = run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes")
    assert down.code == 0, down.stderr
    assert not any(is_running(pid) for pid in pids)
    gone = run_cli("sandbox", "status", "--dir", str(directory), "--json")
    assert gone.code == 7 and "no sandbox in" in gone.stderr, "purged: no sandbox left"


def _check_cluster_on_the_ensemble(directory: Path, connect: str) -> None:
    """The broker registered under the chroot, reconfig is on, records go through."""
    settings = load_settings(directory / "clusters.yaml")
    assert settings.ensemble("zk").connect == connect
    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    try:
        assert zk.get_children("/kafka/brokers/ids") == ["1"]
        config, _ = zk.get("/zookeeper/config")  # dynamic reconfiguration is on
        assert config.decode().count("participant") == 3
    finally:
        zk.stop()
        zk.close()
    cluster = settings.cluster("legacy")
    with ClusterAdmin(cluster) as admin:
        topic = admin.create_topic(unique("zkmode"), 1)
    sent = produce(cluster, topic.name, [Record(b"k", b"v", partition=0)])
    assert read_partition(cluster, topic.name, 0, 0, 1) == sent


def _broker_killed_then_up_again(directory: Path, connect: str) -> None:
    """A killed broker's ZooKeeper session outlives it (18 s): status calls it down all
    the same, and `up` waits the stale registration out instead of starting a broker
    that would exit ("node already exists"); it says ready only once the broker serves."""
    run_cli("sandbox", "stop-broker", "--dir", str(directory), "--cluster", "legacy",
            "--broker", "1", "--kill")  # fmt: skip
    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    try:
        assert zk.exists("/kafka/brokers/ids/1"), "the killed broker's registration stays"
        code, status = _status(directory)
        assert code == 1
        assert [(b["alive"], b["serving"]) for b in status["brokers"]] == [(False, False)]
        again = run_cli("sandbox", "up", "--dir", str(directory), "--cluster", "legacy",
                        "--zookeeper", "zk/kafka")  # fmt: skip
        assert again.code == 0, again.stderr
        assert "waiting for its previous ZooKeeper session to expire" in again.stderr
        assert zk.exists("/kafka/brokers/ids/1")
    finally:
        zk.stop()
        zk.close()
    code, status = _status(directory)
    assert code == 0 and status["brokers"][0]["serving"], status
    log = (directory / "legacy" / "broker-1" / "broker.log").read_text()
    assert "node already exists" not in log.lower()
    cluster = load_settings(directory / "clusters.yaml").cluster("legacy")
    with ClusterAdmin(cluster) as admin:
        topic = admin.create_topic(unique("again"), 1)
    sent = produce(cluster, topic.name, [Record(b"k", b"v", partition=0)])
    assert read_partition(cluster, topic.name, 0, 0, 1) == sent


def test_ctrl_c_during_up_at_a_seeded_moment_leaves_nothing_running(tmp_path: Path) -> None:
    """A fresh sandbox of a ZooKeeper node and a broker: `up` gets Ctrl-C at a seeded
    moment (while the node starts, while the broker formats or starts, ...). Whatever it
    had started is stopped and recorded as stopped: no process whose command line names
    a file of the sandbox is left (found by command line, not by sandbox.json). `up`
    runs as from a shell (SIGINT at its default: a pytest-xdist worker ignores it, and
    its children would too). An interrupt that lands after `up` finished tested nothing:
    `down` stops that one and it runs again, earlier, in a new folder."""
    rng = seeded()
    latest = 12.0  # about how long `up` takes here under the suite's load
    try:
        for attempt in range(4):
            directory = tmp_path / f"sb{attempt}"
            moment = rng.uniform(0.2, latest)
            code, stderr = _interrupted_up(directory, moment)
            print(f"attempt {attempt}: Ctrl-C after {moment:.2f} s: exit {code}")
            left = processes_naming(directory.resolve(), SANDBOX_FILES)
            if code == 0 or "cut: ready at" in stderr:  # it was done before the interrupt came
                # (or came in the instant between the cluster ready and the process's exit:
                # then what runs is what sandbox.json records, so `status` and `down` see it)
                state = load_state(directory.resolve())
                recorded = {b.pid for c in state.clusters.values() for b in c.brokers}
                recorded |= {n.pid for e in state.ensembles.values() for n in e.nodes}
                assert set(left) <= recorded, f"running, not recorded: {left}; {recorded}"
                run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes")
                latest = moment
                continue
            assert left == {}, f"processes `up` started survived its Ctrl-C: {left}; {stderr}"
            state = load_state(directory.resolve())
            cluster = state.clusters.get("cut")
            assert cluster is None or [b.pid for b in cluster.brokers] == [None]
            ensemble = state.ensembles.get("zk")
            assert ensemble is None or [n.pid for n in ensemble.nodes] == [None]
            return
    finally:  # a failed check leaves nothing running either (by command line)
        stop_processes(processes_naming(tmp_path.resolve(), SANDBOX_FILES), grace=5.0)
    raise AssertionError(f"`up` finished before each of 4 interrupts: {stderr}")


SANDBOX_FILES = ["server.properties", "controller.properties", "zoo.cfg", "registry.yaml"]


def _interrupted_up(directory: Path, moment: float) -> tuple[int, str]:
    """`sandbox up` of a ZooKeeper node and a broker, SIGINT ``moment`` seconds after it
    began: its exit code and stderr."""
    command = interruptible("-m", "kmigrate", "sandbox", "up", "--dir", str(directory),
                            "--zookeeper", "zk", "--nodes", "1", "--cluster", "cut")  # fmt: skip
    up = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        try:
            up.wait(timeout=moment)
        except subprocess.TimeoutExpired:
            up.send_signal(signal.SIGINT)
        _, stderr = up.communicate(timeout=60)
    finally:
        up.kill()
    return up.returncode, stderr


def _node_killed_then_restarted(directory: Path) -> None:
    """A ZooKeeper node dies: status says so (exit 1); up restarts it on its data."""
    victim = load_state(directory.resolve()).ensembles["zk"].nodes[0]
    os.kill(victim.pid or 0, signal.SIGKILL)
    wait_for(lambda: not is_running(victim.pid), timeout=30, message="node 1 gone")
    code, status = _status(directory)
    assert code == 1
    assert [n["alive"] for n in status["zookeeper"]] == [False, True, True]
    again = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk")
    assert again.code == 0, again.stderr
    code, status = _status(directory)
    assert code == 0 and all(n["mode"] for n in status["zookeeper"])
    assert status["zookeeper"][0]["client_port"] == victim.client_port
