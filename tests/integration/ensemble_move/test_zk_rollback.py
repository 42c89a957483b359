"""`zk migrate` as on real hosts, through the operator's command templates (here calling
the sandbox's own stand-ins for such scripts): a move killed during the switch is rolled
back; the broker is on the old ensemble again, the new one is empty and on its own, and
no acknowledged record is lost or repeated. Then the refusals of `zk migrate`, each one
line with nothing changed. A sandbox of its own (old and new ensembles of 3 servers, a
1-broker ZooKeeper-mode cluster)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from harness.helpers import run_cli, unique, wait_for
from harness.killpoints import KillPoint
from harness.killrun import kill_at_point, kmigrate
from kmigrate.config import load_settings
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.runbook.lock import held
from kmigrate.sandbox import process
from kmigrate.sandbox.node_files import broker_properties
from kmigrate.sandbox.state import load_state
from kmigrate.sandbox.zk_operator import SandboxOperator
from kmigrate.store import store_for
from tests.integration.ensemble_move.conftest import old_and_new
from tests.integration.ensemble_move.test_zk_move import _migrate, server_ids_and_root
from tests.integration.traffic import Traffic


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with old_and_new(tmp_path_factory, "zkback") as directory:
        yield directory


def _templates(sandbox: Path) -> list[str]:
    """What an operator passes on real hosts; {host} is checked to arrive."""
    kmigrate = f"{sys.executable} -m kmigrate sandbox"
    return [
        "--restart-command",
        f"test {{host}} = 127.0.0.1 && {kmigrate} restart-broker --dir {sandbox} "
        "--cluster legacy --broker {broker} --zookeeper-connect {zookeeper_connect}",
        "--zk-stop-command",
        f"test {{host}} = 127.0.0.1 && {kmigrate} stop-zk-server --dir {sandbox} --id {{id}}",
        "--zk-start-command",
        f"{kmigrate} start-zk-server --dir {sandbox} --id {{id}} --dynamic-file "
        "{dynamic_file} --fresh {fresh}",
    ]


def _plan(config: Path, plan: Path) -> None:
    planned = run_cli(
        "zk", "plan", "--cluster", "legacy", "--source-ensemble", "old",
        "--target-ensemble", "new", "-o", str(plan), "--force", config=str(config),
    )  # fmt: skip
    assert planned.code == 0, planned.stderr


def test_a_move_through_templates_killed_in_the_switch_rolls_back_to_the_old_ensemble(
    sandbox: Path, tmp_path: Path
) -> None:
    config = sandbox / "clusters.yaml"
    settings = load_settings(config)
    kafka = settings.cluster("legacy")
    topic = unique("zkback")
    with ClusterAdmin(kafka) as admin:
        admin.create_topic(topic, 1)
    plan = tmp_path / "move.yaml"
    _plan(config, plan)
    templates = _templates(sandbox)
    traffic = Traffic(kafka.as_librdkafka(), topic)
    traffic.start()
    log = tmp_path / "migrate.log"
    try:
        argv = kmigrate(config, "zk", "migrate", str(plan), *templates)
        # killed once the first broker's restart command runs: the rollback restarts it
        restarting = KillPoint("running --restart-command to restart broker")
        kill_at_point(argv, log, restarting, timeout_s=180)
        back = _migrate(config, plan, log, "--rollback", "--yes", *templates)
        assert back.wait(300) == 0, log.read_text()[-3000:]
    finally:
        traffic.done.set()
        traffic.join(150)
    assert not traffic.failed, traffic.failed[:3]
    text = log.read_text()
    assert "is an empty ensemble of its own again" in text
    assert "running --zk-start-command to start ZooKeeper server 4" in text
    assert "running --restart-command to restart broker 1" in text

    old, new = settings.ensemble("old").connect, settings.ensemble("new").connect
    props = (sandbox / "legacy" / "broker-1" / "server.properties").read_text()
    assert f"zookeeper.connect={old}/kafka\n" in props
    assert server_ids_and_root(old) == ({"1", "2", "3"}, ["kafka", "zookeeper"])
    assert server_ids_and_root(new) == ({"4", "5", "6"}, ["zookeeper"])
    with ClusterAdmin(kafka) as admin:
        high = admin.watermarks(topic)[0].high
    values = [r.value for r in read_partition(kafka, topic, 0, 0, high)]
    traffic.check_stored(values)

    again = run_cli("zk", "migrate", str(plan), config=str(config))
    assert again.code == 5, again.stderr
    assert "rolled back; write a new plan" in again.stderr
    early = run_cli("zk", "cleanup", "--cluster", "legacy", "--yes", config=str(config))
    assert early.code == 5 and "no finished ZooKeeper move" in early.stderr, early.stderr


def test_migrate_refusals_are_one_line_and_change_nothing(sandbox: Path, tmp_path: Path) -> None:
    """Another command at work, a plan of another cluster, a broker not registered, an
    under-replicated partition. Runs last in the module: its offline replica stays."""
    config = sandbox / "clusters.yaml"
    settings = load_settings(config)
    plan = tmp_path / "move.yaml"
    _plan(config, plan)
    old, new = settings.ensemble("old").connect, settings.ensemble("new").connect

    def refused(plan_file: Path, says: str) -> None:
        result = run_cli("zk", "migrate", str(plan_file), "--timeout", "20", config=str(config))
        lines = result.stderr.strip().splitlines()
        assert result.code == 5, result.stderr
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
        assert server_ids_and_root(old) == ({"1", "2", "3"}, ["kafka", "zookeeper"])
        assert server_ids_and_root(new) == ({"4", "5", "6"}, ["zookeeper"])

    with held(
        store_for(settings), "zk-move:legacy", "zk migrate other.yaml", what="the ZooKeeper "
        "move of cluster 'legacy'", on_takeover=lambda _h: None,
    ):  # fmt: skip
        refused(plan, "is busy: `kmigrate zk migrate other.yaml`")

    foreign = tmp_path / "foreign.yaml"
    body = yaml.safe_load(plan.read_text())
    foreign.write_text(yaml.safe_dump({**body, "cluster_id": "AnotherClusterId0000A"}))
    refused(foreign, "the plan was written for cluster id AnotherClusterId0000A")

    state = load_state(sandbox)
    cluster = state.clusters["legacy"]
    broker = cluster.brokers[0]
    assert broker.pid is not None
    process.stop_processes({broker.pid: broker_properties(sandbox, cluster, broker)}, grace=30)
    try:
        refused(plan, "not starting the move of 'legacy': broker(s) 1 not registered")
    finally:
        SandboxOperator(sandbox, "legacy").recover_broker(1, "", registered=False)

    kafka = settings.cluster("legacy")

    def back() -> bool:
        try:
            with ClusterAdmin(kafka) as cluster_admin:
                return bool(cluster_admin.describe_cluster().brokers)
        except KMigrateError:
            return False

    wait_for(back, timeout=120, message="broker 1 serving again")
    admin = AdminClient(kafka.as_librdkafka())
    stuck = unique("offline-replica")
    # ZooKeeper mode takes a replica on a broker that does not exist: it never catches up.
    admin.create_topics([NewTopic(stuck, 1, -1, replica_assignment=[[1, 99]])])[stuck].result(30)

    def under_replicated() -> bool:
        with ClusterAdmin(kafka) as cluster_admin:
            topics = cluster_admin.list_topics()
        return any(t.name == stuck for t in topics)

    wait_for(under_replicated, timeout=60, message="the topic with an offline replica")
    refused(plan, f"1 under-replicated partition(s), e.g. {stuck}[0]")
