"""A secure ZooKeeper-mode cluster taken to KRaft by `kmigrate kraft`: one SASL_SSL
listener (SCRAM-SHA-512 over TLS for clients and between brokers), Kafka's AclAuthorizer
with allow.everyone.if.no.acl.found=false and `admin` its only super user (`sandbox up
--zookeeper ... --secure --tls`).

Five controllers: the plan holds no password and no anonymous super user (controllers
and brokers authenticate each other as `admin`, a super user, so the quorum elects),
and the controller listener is SASL_SSL with the brokers' certificate, so the PLAIN
password between nodes never crosses the network in clear;
SCRAM logins work throughout (the plain user
`client` writes and its group reads all along, each as its ACLs allow); after finalize
the user may still write only where an ACL lets it, Kafka's own tool logs in, and every
acknowledged record was read once; Kafka's MetadataQuorumCommand finds the five
controllers the quorum's voters.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import java_on, run_cli, unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import controller_properties
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.integration.kraft import live, scram
from tests.integration.traffic import Group, Traffic

CLUSTER = "vaultzk"
AS_CLIENT = "vaultzk-as-client"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    directory = tmp_path_factory.mktemp("kraft-secure")
    up = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk/kafka", "--nodes",
                 "1", "--cluster", CLUSTER, "--secure", "--tls", timeout=600)  # fmt: skip
    try:
        assert up.code == 0, up.stderr
        yield load_state(directory.resolve())
    finally:
        run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes", "--grace", "5")


def _kraft(state: SandboxState, *args: str) -> tuple[int, str]:
    done = run_cli("kraft", *args, config=str(scram.with_client(state, CLUSTER)), timeout=900)
    return done.code, done.stdout + done.stderr


def test_a_secure_zookeeper_cluster_migrates_with_scram_logins_throughout(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    settings = load_settings(sandbox.directory / "clusters.yaml")
    admin_config = settings.cluster(CLUSTER)
    client = cluster_config(sandbox, sandbox.clusters[CLUSTER], user=CLIENT_USER, timeout_s=10)
    topic, closed, group = unique("sec"), unique("closed"), unique("g-sec")
    with ClusterAdmin(admin_config) as admin:
        scram.grants(admin, topic, closed, group)
    plan = tmp_path / "kraft.yaml"
    code, said = _kraft(sandbox, "plan", "--cluster", CLUSTER, "--controllers", "5",
                        "-o", str(plan), "--probe-as", AS_CLIENT)  # fmt: skip
    assert code == 0, said
    text = plan.read_text()
    passwords = load_passwords(sandbox.directory, CLUSTER)
    assert not any(p in text for p in passwords.values()), "a password in the plan"
    assert "ANONYMOUS" not in text and "super.users: User:admin" in text

    traffic = Traffic(client.as_librdkafka(), topic)
    reader = Group(client.as_librdkafka(), topic, group)
    traffic.start()
    reader.start()
    try:
        try:
            code, said = _kraft(sandbox, "migrate", str(plan))
            assert code == 0, said
            code, said = _kraft(sandbox, "finalize", str(plan), "--yes")
            assert code == 0, said
        finally:
            traffic.done.set()
            traffic.join(150)
        assert not traffic.failed, traffic.failed[:3]
        assert len(traffic.acked) > 100, "the SCRAM user kept writing through the migration"
        live.read_once(admin_config, topic, traffic)
        reader.wait_read(traffic, timeout=90)
    finally:
        reader.done.set()
        reader.join(30)

    events = json.loads(_kraft(sandbox, "history", "--cluster", CLUSTER, "--json")[1])["events"]
    (baseline,) = [e["detail"] for e in events if e["step"] == "authorization"]
    asked = json.loads(baseline)["answers"]
    assert asked[f"User:{CLIENT_USER}: alter-config {topic}"].startswith("denied"), asked
    assert asked[f"User:{ADMIN_USER}: alter-config {topic}"] == "allowed", asked
    assert {e["phase"] for e in events if e["step"] == "authorization unchanged"} >= {
        "controllers", "roll1", "dual-write", "roll2", "finalize"
    }  # fmt: skip
    assert scram.writes(client, topic) and not scram.writes(client, closed), (
        "the ACLs decide as before"
    )
    scram.tools_log_in(sandbox, CLUSTER, passwords[ADMIN_USER], topic, tmp_path)
    assert _kraft(sandbox, "status", "--cluster", CLUSTER)[0] == 0
    cluster = load_state(sandbox.directory).clusters[CLUSTER]
    assert len(cluster.controllers) == 5
    for node in cluster.controllers:  # the quorum elected as the admin: nobody added
        controller = controller_properties(sandbox.directory, cluster, node).read_text()
        assert "ANONYMOUS" not in controller and "super.users=User:admin\n" in controller
        assert ",CONTROLLER:SASL_SSL\n" in controller
    assert _voters(sandbox, tmp_path / "right.properties") == {
        c.node_id for c in cluster.controllers
    }


def _voters(state: SandboxState, properties: Path) -> set[int]:
    """The quorum's voters as Kafka's MetadataQuorumCommand (`kafka-metadata-quorum.sh
    describe --status`) lists them, logged in as the admin (scram.tools_log_in wrote
    ``properties``)."""
    done = subprocess.run(
        [*java_on(ensure_jars("3.9.1")), "-Xmx256m", "org.apache.kafka.tools.MetadataQuorumCommand",
         "--bootstrap-server", state.clusters[CLUSTER].bootstrap_servers,
         "--command-config", str(properties), "describe", "--status"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (voters,) = [line for line in done.stdout.splitlines() if line.startswith("CurrentVoters:")]
    return {int(i) for i in re.findall(r'"id": ?(\d+)', voters)}
