"""A secure ZooKeeper-mode cluster taken to KRaft by `kmigrate kraft`: one SASL_PLAINTEXT
listener (SCRAM-SHA-512 for clients and between brokers), Kafka's AclAuthorizer with
allow.everyone.if.no.acl.found=false and `admin` its only super user (`sandbox up
--zookeeper ... --secure`).

The plan holds no password and no anonymous super user (controllers and brokers
authenticate each other as `admin`); SCRAM logins work throughout (the plain user
`client` writes and its group reads all along, each as its ACLs allow); after finalize
the user may still write only where an ACL lets it, Kafka's own tool logs in, and every
acknowledged record was read once.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.helpers import java_on, run_cli, unique
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.errors import AuthorizationError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.kraft.plan import load_plan
from kmigrate.model.cluster import AclEntry
from kmigrate.model.records import Record
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords, password_variable
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import controller_properties
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.integration.kraft import quorum
from tests.integration.traffic import Group, Traffic

CLUSTER = "vaultzk"
AS_CLIENT = "vaultzk-as-client"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    directory = tmp_path_factory.mktemp("kraft-secure")
    up = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk/kafka",
                 "--nodes", "1", "--cluster", CLUSTER, "--secure", timeout=600)  # fmt: skip
    try:
        assert up.code == 0, up.stderr
        yield load_state(directory.resolve())
    finally:
        run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes", "--grace", "5")


def _kraft(state: SandboxState, *args: str) -> tuple[int, str]:
    done = run_cli("kraft", *args, config=str(_with_client(state)), timeout=900)
    return done.code, done.stdout + done.stderr


def _with_client(state: SandboxState) -> Path:
    """The sandbox's clusters.yaml plus an entry reaching the cluster as `client` (the
    probes ask as it too: `kraft plan --probe-as`)."""
    path = state.directory / "with-client.yaml"
    document = yaml.safe_load((state.directory / "clusters.yaml").read_text())
    entry = json.loads(json.dumps(document["clusters"][CLUSTER]))
    entry["properties"]["sasl.username"] = CLIENT_USER
    entry["properties"]["sasl.password"] = "${" + password_variable(CLUSTER, CLIENT_USER) + "}"
    document["clusters"][AS_CLIENT] = entry
    path.write_text(yaml.safe_dump(document))
    return path


def _grants(admin: ClusterAdmin, topic: str, closed: str, group: str) -> None:
    user = f"User:{CLIENT_USER}"
    admin.create_topic(topic, 2)
    admin.create_topic(closed, 1)
    admin.create_acls(
        [AclEntry("TOPIC", topic, "LITERAL", user, "*", op, "ALLOW")
         for op in ("WRITE", "READ", "DESCRIBE")]
        + [AclEntry("GROUP", group, "LITERAL", user, "*", "READ", "ALLOW")]
    )  # fmt: skip


def _writes(client: ClusterConfig, topic: str) -> bool:
    try:
        produce(client, topic, [Record(None, b"probe", partition=0)])
        return True
    except AuthorizationError:
        return False


def test_a_revert_after_the_quorum_lost_its_majority_keeps_partitions_electable(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """A quorum of three (the controllers authenticate each other as the admin, a super
    user), then KAFKA-20488: two voters frozen, the third runs election after election,
    and the quorum comes back with an epoch far above ZooKeeper's `/controller_epoch`,
    writing the partition states of a topic made since with it. The ZooKeeper-mode
    controller elected after a revert takes `/controller_epoch` plus one, and refuses to
    elect new leaders of partitions "written by another controller" (a higher epoch).
    The revert lifts `/controller_epoch` first: afterwards the ZooKeeper-mode controller
    leads above the KRaft epoch, as Kafka's guide asks. (On this one-broker sandbox the
    refused election itself does not show: a partition's only replica keeps leading
    without one. Without the lift the test fails on the epochs: about 6 against 13.)"""
    admin_config = load_settings(sandbox.directory / "clusters.yaml").cluster(CLUSTER)
    plan = tmp_path / "kraft3.yaml"
    code, said = _kraft(sandbox, "plan", "--cluster", CLUSTER, "-o", str(plan))  # 3 controllers
    assert code == 0, said
    code, said = _kraft(sandbox, "migrate", str(plan), "--until", "dual-write")
    assert code == 0, said
    connect = load_plan(plan).zookeeper_connect
    kraft_epoch = quorum.strand(sandbox.directory, CLUSTER, connect)
    topic = unique("epoch")
    with ClusterAdmin(admin_config) as admin:
        admin.create_topic(topic, 3)  # its partition states carry the KRaft epoch

    code, said = _kraft(sandbox, "revert", str(plan), "--yes")
    assert code == 0, said
    assert "(KAFKA-20488)" in said
    zk_epoch, no_kraft = quorum.epochs(connect)
    assert no_kraft is None and kraft_epoch is not None and zk_epoch > kraft_epoch
    with ClusterAdmin(admin_config) as admin:
        (meta,) = [t for t in admin.list_topics() if t.name == topic]
        assert all(p.leader >= 0 and not p.under_replicated for p in meta.partitions), meta
    sent = [Record(None, f"after-{p}".encode(), partition=p) for p in range(3)]
    produce(admin_config, topic, sent)
    read = [[r.value for r in read_partition(admin_config, topic, p, 0, 1)] for p in range(3)]
    assert read == [[r.value] for r in sent]


def test_a_secure_zookeeper_cluster_migrates_with_scram_logins_throughout(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    settings = load_settings(sandbox.directory / "clusters.yaml")
    admin_config = settings.cluster(CLUSTER)
    client = cluster_config(sandbox, sandbox.clusters[CLUSTER], user=CLIENT_USER, timeout_s=10)
    topic, closed, group = unique("sec"), unique("closed"), unique("g-sec")
    with ClusterAdmin(admin_config) as admin:
        _grants(admin, topic, closed, group)
    plan = tmp_path / "kraft.yaml"
    code, said = _kraft(sandbox, "plan", "--cluster", CLUSTER, "--controllers", "1",
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
        _read_once(admin_config, topic, traffic)
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
    assert _writes(client, topic) and not _writes(client, closed), "the ACLs decide as before"
    _tools_log_in(sandbox, passwords[ADMIN_USER], topic, tmp_path)
    assert _kraft(sandbox, "status", "--cluster", CLUSTER)[0] == 0
    cluster = load_state(sandbox.directory).clusters[CLUSTER]
    (node,) = cluster.controllers
    controller = controller_properties(sandbox.directory, cluster, node).read_text()
    assert "ANONYMOUS" not in controller and "super.users=User:admin\n" in controller


def _read_once(config: ClusterConfig, topic: str, traffic: Traffic) -> None:
    with ClusterAdmin(config) as admin:
        marks = admin.watermarks(topic)
    values = [r.value for w in marks for r in read_partition(config, topic, w.partition, 0, w.high)]
    traffic.check_stored(values)


def _tools_log_in(state: SandboxState, password: str, topic: str, tmp_path: Path) -> None:
    """Kafka's own TopicCommand logs in with SCRAM on the KRaft cluster; a wrong password
    is refused."""
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    bootstrap = state.clusters[CLUSTER].bootstrap_servers
    for name, secret in (("right", password), ("wrong", "not-the-Password-42")):
        (tmp_path / f"{name}.properties").write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
            f'sasl.jaas.config={jaas} username="{ADMIN_USER}" password="{secret}";\n'
        )
    runs = {name: _topic_command(bootstrap, tmp_path / f"{name}.properties")
            for name in ("right", "wrong")}  # fmt: skip
    assert runs["right"].returncode == 0 and topic in runs["right"].stdout.split()
    wrong = runs["wrong"].stdout + runs["wrong"].stderr
    assert runs["wrong"].returncode != 0 and "Authentication failed" in wrong, wrong[-2000:]


def _topic_command(bootstrap: str, properties: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*java_on(ensure_jars("3.9.1")), "-Xmx256m",
         "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
         "--command-config", str(properties), "--list"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
