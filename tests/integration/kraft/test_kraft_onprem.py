"""The shape issue 49 was filed on, taken to three KRaft controllers: a ZooKeeper-mode
cluster whose clients log in with SCRAM (SASL_PLAINTEXT) while its brokers talk PLAINTEXT
on a listener of their own, Kafka's AclAuthorizer with
allow.everyone.if.no.acl.found=true and `admin` its only super user (`sandbox up --secure
--internal-plaintext`).

The brokers would reach the controllers as User:ANONYMOUS, which is no super user, so
the controller listener gets kmigrate's own principal. `kraft migrate` is SIGKILLed at a
seeded moment of a roll and run again, then finalized, while the plain user `client`
writes and its group reads over SCRAM: every acknowledged record read once; metadata
(topics, configs, ACLs, idle offsets, SCRAM credentials, quotas, broker configs) and the
authorization probes (asked as the admin and as `client`) as before; `client` still
writes only where an ACL lets it; Kafka's own tool logs in with SCRAM; the brokers'
listeners and super users unchanged; with ZooKeeper stopped the cluster serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import run_cli, seeded, unique
from harness.killpoints import choose
from harness.killrun import kill_at_point, kmigrate
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft import snapshot
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords
from kmigrate.sandbox.node_files import broker_properties, controller_properties
from kmigrate.sandbox.properties import read_properties
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.integration.kraft import live, scram
from tests.integration.traffic import Group, Traffic

CLUSTER = "onprem"
BROKERS = 2
ROLLS = ["phase roll1", "roll1: restarting broker 2", "phase roll2", "roll2: restarting broker 2"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    directory = tmp_path_factory.mktemp("kraft-onprem")
    up = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk/kafka",
                 "--nodes", "1", "--cluster", CLUSTER, "--brokers", str(BROKERS), "--secure",
                 "--internal-plaintext", timeout=600)  # fmt: skip
    try:
        assert up.code == 0, up.stderr
        yield load_state(directory.resolve())
    finally:
        run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes", "--grace", "5")


def test_scram_clients_and_plaintext_brokers_migrate_to_three_controllers(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    config = scram.with_client(sandbox, CLUSTER)
    admin_config = load_settings(config).cluster(CLUSTER)
    client = cluster_config(sandbox, sandbox.clusters[CLUSTER], user=CLIENT_USER, timeout_s=10)
    topic, closed, group = unique("onprem"), unique("closed"), unique("g-onprem")
    live.furnish(admin_config, BROKERS)
    with ClusterAdmin(admin_config) as admin:
        scram.grants(admin, topic, closed, group)
        before = snapshot.take(admin)
    assert not scram.writes(client, closed), "no ACL lets `client` write there"
    brokers_before = _brokers_listeners(sandbox)

    plan = tmp_path / "kraft.yaml"
    planned = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", "3",
                         "-o", str(plan), "--probe-as", f"{CLUSTER}-as-client")  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert "as User:kmigrate-controller (PLAIN), a super user of the controllers only" in (
        planned.stdout
    )
    secret = (tmp_path / "kraft.yaml.secret").read_text().strip()

    traffic = Traffic(client.as_librdkafka(), topic)
    reader = Group(client.as_librdkafka(), topic, group)
    traffic.start()
    reader.start()
    try:
        kill_at_point(kmigrate(config, "kraft", "migrate", str(plan)), tmp_path / "kraft.log",
                      choose(seeded(), ROLLS, span_s=6.0), timeout_s=300)  # fmt: skip
        done = live.kraft(config, "migrate", str(plan))
        assert done.returncode == 0, done.stderr
        finalized = live.kraft(config, "finalize", str(plan), "--yes")
        assert finalized.returncode == 0, finalized.stderr
    finally:
        traffic.done.set()
        traffic.join(150)
    live.exactly_once(admin_config, topic, traffic, reader)

    with ClusterAdmin(admin_config) as admin:
        assert snapshot.differences(before, snapshot.take(admin)) == []
    assert scram.writes(client, topic) and not scram.writes(client, closed), "ACLs as before"
    passwords = load_passwords(sandbox.directory, CLUSTER)
    scram.tools_log_in(sandbox, CLUSTER, passwords[ADMIN_USER], topic, tmp_path)
    assert _brokers_listeners(sandbox) == brokers_before, "no client listener changed"
    state = load_state(sandbox.directory)
    cluster = state.clusters[CLUSTER]
    assert len(cluster.controllers) == 3
    for node in cluster.controllers:
        found = read_properties(controller_properties(sandbox.directory, cluster, node))
        assert found["super.users"] == "User:admin;User:kmigrate-controller"
        assert found["listener.security.protocol.map"].endswith(",CONTROLLER:SASL_PLAINTEXT")
        assert secret in found["listener.name.controller.plain.sasl.jaas.config"]
    said = done.stdout + done.stderr + finalized.stdout + finalized.stderr + plan.read_text()
    assert secret not in said + (tmp_path / "kraft.log").read_text()
    live.serves_without_zookeeper(sandbox.directory, admin_config, BROKERS)


def _brokers_listeners(state: SandboxState) -> list[tuple[str, ...]]:
    """Each broker's client-facing settings: listeners, SASL mechanisms, super users."""
    cluster = load_state(state.directory).clusters[CLUSTER]
    found = [
        read_properties(broker_properties(state.directory, cluster, b)) for b in cluster.brokers
    ]
    keys = ("listeners", "advertised.listeners", "sasl.enabled.mechanisms", "super.users")
    return [tuple(f.get(k, "") for k in keys) for f in found]
