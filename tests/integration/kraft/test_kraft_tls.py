"""A ZooKeeper-mode cluster whose brokers talk SSL and ask every client for a certificate
(`sandbox up --tls --mtls`: a CA of its own, ssl.client.auth=required, principals the
certificates' common names by ssl.principal.mapping.rules, Kafka's AclAuthorizer with
allow.everyone.if.no.acl.found=false, the brokers' and the admin's certificates the only
super users) taken to three KRaft controllers by `kmigrate kraft`, with an acks=all
producer and a consumer group presenting the admin's certificate throughout.

The controller listener is SSL and asks for client certificates; controllers use the
brokers' key and trust stores and mapping rules, so brokers and controllers are the
brokers' certificate's principal there (read by `kraft plan` from the PEM key store and
mapped as the brokers map it), a super user already: a quorum of three elects, and
super.users is not widened. `kraft migrate` is SIGKILLed at a seeded moment of a roll
and run again; the authorization probes ask as the admin and as the `client`
certificate after every phase. After finalize every acknowledged record was read once,
the metadata (topics, configs, ACLs, idle offsets, SCRAM credentials, quotas, dynamic
broker configs) reads as before, `client` still writes only where an ACL lets it,
Kafka's own TopicCommand presents the admin's certificate, and with ZooKeeper stopped
the cluster serves.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.helpers import java_on, seeded, unique
from harness.killpoints import choose
from harness.killrun import kill_at_point, kmigrate
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft import snapshot
from kmigrate.kraft.plan import load_plan
from kmigrate.sandbox import manager, tls
from kmigrate.sandbox.clusters_yaml import cluster_config
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import controller_properties
from kmigrate.sandbox.properties import read_properties
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.integration.kraft import live, scram

CLUSTER = "tlszk"
AS_CLIENT = f"{CLUSTER}-as-client"
BROKERS = 2
BROKER = tls.principal(CLUSTER, "broker")  # User:tlszk broker, by the mapping rules
SUPERS = f"{BROKER};{tls.principal(CLUSTER, ADMIN_USER)}"
ROLLS = ["phase roll1", "roll1: restarting broker 2", "phase roll2", "roll2: restarting broker 2"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    directory = tmp_path_factory.mktemp("kraft-tls").resolve()
    manager.up(directory, manager.UpRequest(clusters=[CLUSTER], brokers=BROKERS,
                                            zookeeper="zk/kafka", nodes=1, tls=True,
                                            mtls=True))  # fmt: skip
    try:
        yield load_state(directory)
    finally:
        manager.down(directory, purge=True, grace=5)


def test_an_mtls_cluster_migrates_to_three_controllers_that_present_the_brokers_certificate(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    config = _with_client(sandbox)
    kafka = load_settings(config).cluster(CLUSTER)
    client = cluster_config(sandbox, sandbox.clusters[CLUSTER], user=CLIENT_USER, timeout_s=10)
    topic, closed, group = unique("mtls"), unique("closed"), unique("g-mtls")
    live.furnish(kafka, BROKERS)
    with ClusterAdmin(kafka) as admin:
        scram.grants(admin, topic, closed, group, tls.principal(CLUSTER, CLIENT_USER))
        before = snapshot.take(admin)
    assert before.scram and before.quotas and len(before.acls) == 9
    assert scram.writes(client, topic) and not scram.writes(client, closed)
    plan = tmp_path / "kraft.yaml"
    planned = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", "3",
                         "-o", str(plan), "--probe-as", AS_CLIENT)  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert (
        f"SSL with client certificates; brokers and controllers present the brokers' "
        f"certificate, {BROKER}, a super user of the controllers" in planned.stdout
    )
    assert load_plan(plan).certificate_principal == BROKER
    assert not (tmp_path / "kraft.yaml.secret").exists(), "no secret: certificates"

    with live.traffic(kafka, BROKERS) as (moving, traffic, reader):
        point = choose(seeded(), ROLLS, span_s=6.0)
        kill_at_point(kmigrate(config, "kraft", "migrate", str(plan)), tmp_path / "kraft.log",
                      point, timeout_s=300)  # fmt: skip
        done = live.kraft(config, "migrate", str(plan))
        assert done.returncode == 0, done.stderr
        finalized = live.kraft(config, "finalize", str(plan), "--yes")
        assert finalized.returncode == 0, finalized.stderr
    live.exactly_once(kafka, moving, traffic, reader)

    status = json.loads(live.kraft(config, "status", "--cluster", CLUSTER, "--json").stdout)
    assert status["phase"] == "finalized" and set(status["brokers"].values()) == {"kraft"}
    with ClusterAdmin(kafka) as admin:
        assert snapshot.differences(before, snapshot.take(admin)) == []
    assert scram.writes(client, topic) and not scram.writes(client, closed), "ACLs as before"
    listed = _topic_command(sandbox, tmp_path)
    assert listed.returncode == 0 and topic in listed.stdout.split(), listed.stderr[-2000:]
    cluster = load_state(sandbox.directory).clusters[CLUSTER]
    assert len(cluster.controllers) == 3
    for node in cluster.controllers:
        found = read_properties(controller_properties(sandbox.directory, cluster, node))
        assert found["listener.security.protocol.map"].endswith(",CONTROLLER:SSL")
        assert found["listener.name.controller.ssl.client.auth"] == "required"
        assert found["ssl.principal.mapping.rules"] == tls.MAPPING_RULES
        assert found["super.users"] == SUPERS, "the brokers' super users, not widened"
    live.serves_without_zookeeper(sandbox.directory, kafka, BROKERS)


def _with_client(state: SandboxState) -> Path:
    """The sandbox's clusters.yaml plus an entry presenting the `client` certificate."""
    path = state.directory / "with-client.yaml"
    document = yaml.safe_load((state.directory / "clusters.yaml").read_text())
    entry = json.loads(json.dumps(document["clusters"][CLUSTER]))
    certificate, key = tls.tls_files(state.directory / CLUSTER).client(CLIENT_USER)
    entry["properties"] |= {"ssl.certificate.location": str(certificate),
                            "ssl.key.location": str(key)}  # fmt: skip
    document["clusters"][AS_CLIENT] = entry
    path.write_text(yaml.safe_dump(document))
    return path


def _topic_command(state: SandboxState, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Kafka's TopicCommand listing topics with the admin's certificate (a PEM key store)."""
    files = tls.tls_files(state.directory / CLUSTER)
    certificate, key = files.client(ADMIN_USER)
    keystore = tmp_path / "admin.pem"
    keystore.write_bytes(key.read_bytes() + certificate.read_bytes())
    properties = tmp_path / "admin.properties"
    properties.write_text(
        f"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={keystore}\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={files.ca}\n"
    )
    return subprocess.run(
        [*java_on(ensure_jars("3.9.1")), "-Xmx256m", "org.apache.kafka.tools.TopicCommand",
         "--bootstrap-server", state.clusters[CLUSTER].bootstrap_servers,
         "--command-config", str(properties), "--list"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
