"""The SCRAM side of a secure sandbox cluster under migration: a clusters.yaml entry
reaching it as the plain user `client`, that user's grants, whether a write of its is
allowed, and Kafka's own tool logging in (and a wrong password refused)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from harness.helpers import java_on
from kmigrate.config import ClusterConfig
from kmigrate.errors import AuthorizationError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.cluster import AclEntry
from kmigrate.model.records import Record
from kmigrate.sandbox.clusters_yaml import password_variable
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState
from kmigrate.sandbox.tls import tls_files


def with_client(state: SandboxState, cluster: str) -> Path:
    """The sandbox's clusters.yaml plus an entry CLUSTER-as-client reaching the cluster
    as `client` (the probes ask as it too: `kraft plan --probe-as`)."""
    path = state.directory / "with-client.yaml"
    document = yaml.safe_load((state.directory / "clusters.yaml").read_text())
    entry = json.loads(json.dumps(document["clusters"][cluster]))
    entry["properties"]["sasl.username"] = CLIENT_USER
    entry["properties"]["sasl.password"] = "${" + password_variable(cluster, CLIENT_USER) + "}"
    document["clusters"][f"{cluster}-as-client"] = entry
    path.write_text(yaml.safe_dump(document))
    return path


def grants(
    admin: ClusterAdmin, topic: str, closed: str, group: str, user: str = f"User:{CLIENT_USER}"
) -> None:
    """``user`` (`client`) may write and read ``topic`` and read as ``group``; ``closed``
    is a topic only alice may write (so ``user`` may not, whatever
    allow.everyone.if.no.acl.found says)."""
    admin.create_topic(topic, 2)
    admin.create_topic(closed, 1)
    admin.create_acls(
        [AclEntry("TOPIC", topic, "LITERAL", user, "*", op, "ALLOW")
         for op in ("WRITE", "READ", "DESCRIBE")]
        + [AclEntry("GROUP", group, "LITERAL", user, "*", "READ", "ALLOW"),
           AclEntry("TOPIC", closed, "LITERAL", "User:alice", "*", "WRITE", "ALLOW")]
    )  # fmt: skip


def writes(client: ClusterConfig, topic: str) -> bool:
    try:
        produce(client, topic, [Record(None, b"probe", partition=0)])
        return True
    except AuthorizationError:
        return False


def tools_log_in(
    state: SandboxState, cluster: str, password: str, topic: str, tmp_path: Path
) -> None:
    """Kafka's own TopicCommand logs in with SCRAM on the KRaft cluster (over TLS where the
    cluster talks it); a wrong password is refused."""
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    found = state.clusters[cluster]
    trust = ""
    if found.tls:  # SASL_SSL: the cluster's CA as a PEM trust store
        ca = tls_files(state.directory / cluster).ca
        trust = f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
    for name, secret in (("right", password), ("wrong", "not-the-Password-42")):
        (tmp_path / f"{name}.properties").write_text(
            f"security.protocol={found.listener}\nsasl.mechanism=SCRAM-SHA-512\n{trust}"
            f'sasl.jaas.config={jaas} username="{ADMIN_USER}" password="{secret}";\n'
        )
    bootstrap = found.bootstrap_servers
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
