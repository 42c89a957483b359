"""A cluster in use while `kmigrate kraft` migrates it: what it holds (topics with
configs, ACLs, an idle group, a SCRAM user, quotas, a dynamic broker config), the command
run as a user runs it, an acks=all producer and a committing group on a topic of their
own, and the check that every acknowledged record was read once. Shared by the KRaft
migration tests."""

from __future__ import annotations

import random
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.helpers import java_on, unique, wait_for
from harness.killpoints import Kill, choose
from harness.killrun import kill_at_point, kmigrate
from harness.userview import committed
from kmigrate.config import ClusterConfig
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.cluster import AclEntry, TopicPartitionOffset
from kmigrate.model.records import Record
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import controller_properties
from kmigrate.sandbox.state import load_state
from kmigrate.sandbox.zk_operator import SandboxOperator
from tests.integration.traffic import Group, Traffic

# a roll's step boundaries (progress lines) a kill is drawn from
ROLL = ["phase {r}", "{r}: restarting broker 1", "{r}: broker 1", "{r}: restarting broker 2"]


def kraft(
    config: Path, *args: str, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kmigrate", "--config", str(config), "kraft", *args],
        capture_output=True, text=True, timeout=600, check=False, input=input_text,
    )  # fmt: skip


def read_once(config: ClusterConfig, topic: str, traffic: Traffic) -> None:
    """Every record ``traffic`` had acknowledged is in ``topic`` once, in send order."""
    with ClusterAdmin(config) as admin:
        marks = admin.watermarks(topic)
    values = [r.value for w in marks for r in read_partition(config, topic, w.partition, 0, w.high)]
    traffic.check_stored(values)


def exactly_once(config: ClusterConfig, topic: str, traffic: Traffic, group: Group) -> None:
    assert not traffic.failed, traffic.failed[:3]
    read_once(config, topic, traffic)
    assert len(traffic.acked) > 100, "the producer kept writing"
    try:
        group.wait_read(traffic, timeout=90)
    finally:
        group.done.set()
        group.join(30)


@contextmanager
def traffic(config: ClusterConfig, replicas: int) -> Iterator[tuple[str, Traffic, Group]]:
    """An acks=all producer and a committing group on a new topic; the producer stops
    after, the group once `exactly_once` saw it read everything."""
    topic = unique("kraft")
    with ClusterAdmin(config) as admin:
        admin.create_topic(topic, 3, replication_factor=replicas)
    traffic = Traffic(config.as_librdkafka(), topic)
    group = Group(config.as_librdkafka(), topic, unique("g-kraft"))
    traffic.start()
    group.start()
    try:
        yield topic, traffic, group
    except BaseException:
        group.done.set()
        raise
    finally:
        traffic.done.set()
        traffic.join(150)


def furnish(config: ClusterConfig, replicas: int) -> None:
    """Topics with configs, ACLs and an idle group: what must read the same throughout."""
    with ClusterAdmin(config) as admin:
        for i in range(4):
            admin.create_topic(f"kept-{i}", 3, replication_factor=replicas,
                               configs={"retention.ms": str(86_400_000 + i)})  # fmt: skip
        admin.create_acls([
            AclEntry("TOPIC", "kept-0", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
            AclEntry("GROUP", "team-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
            # the tests read as User:ANONYMOUS (no SASL, no client certificate): an ACL on
            # kept-0 would hide it
            AclEntry("TOPIC", "kept-", "PREFIXED", "User:ANONYMOUS", "*", "ALL", "ALLOW"),
            # ... and may not alter kept-0's configs (Kafka's ConfigCommand checks it)
            AclEntry("TOPIC", "kept-0", "LITERAL", "User:ANONYMOUS", "*", "ALTER_CONFIGS", "DENY"),
        ])  # fmt: skip
        idle = [TopicPartitionOffset("kept-1", p, 0) for p in range(3)]
        wait_for(lambda: committed(admin, "idle", idle), timeout=60,
                 message="the coordinator of group idle answering")  # fmt: skip
        admin.upsert_scram_credential("alice", "SCRAM-SHA-512", 8192, secrets.token_hex(12))
        admin.set_configs("broker", "1", {"log.cleaner.backoff.ms": "15001"})
    with ClientQuotas(config) as quotas:  # kept through the migration (issue 36)
        quotas.alter({
            (("user", "alice"),): {"producer_byte_rate": 1048576.0},
            (("user", None), ("client-id", "loader")): {"request_percentage": 150.0},
            (("ip", "127.0.0.9"),): {"connection_creation_rate": 20.0},
        })  # fmt: skip


def serves_without_zookeeper(sandbox: Path, kafka: ClusterConfig, replicas: int) -> None:
    """A finalized cluster needs ZooKeeper no more: with the ensemble stopped, a new
    topic is created, written and read."""
    state = load_state(sandbox)
    zookeeper = SandboxOperator(sandbox)
    for ensemble in state.ensembles.values():
        for member in ensemble.nodes:
            zookeeper.stop_server(member.node_id)
    after = unique("after-zk")
    with ClusterAdmin(kafka) as admin:
        admin.create_topic(after, 2, replication_factor=replicas)
    produce(kafka, after, [Record(b"k", b"served without ZooKeeper", partition=0)])
    assert [r.value for r in read_partition(kafka, after, 0, 0, 1)] == [b"served without ZooKeeper"]


def killed_in(
    config: Path,
    log: Path,
    roll: str,
    rng: random.Random,
    *args: str,
    after_broker_1: bool = False,
) -> Kill:
    """`kraft ...` SIGKILLed (its process group) at a boundary of ``roll`` (one after
    broker 1's restart when ``after_broker_1``) or a random moment after one, as the
    seeded chooser draws it."""
    marks = [b.format(r=roll) for b in ROLL[2 if after_broker_1 else 0 :]]
    point = choose(rng, marks, span_s=6.0)
    return kill_at_point(kmigrate(config, "kraft", *args), log, point, timeout_s=240)


def alter_config(bootstrap: str, topic: str) -> subprocess.CompletedProcess[str]:
    """Kafka's ConfigCommand altering ``topic``'s retention through ``bootstrap`` (a
    PLAINTEXT listener: as User:ANONYMOUS)."""
    return subprocess.run(
        [*java_on(ensure_jars("3.9.1")), "-Xmx256m", "kafka.admin.ConfigCommand",
         "--bootstrap-server", bootstrap, "--alter", "--entity-type", "topics",
         "--entity-name", topic, "--add-config", "retention.ms=3600000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def only_in_the_nodes_files(sandbox: Path, cluster: str, secret: str, said: list[str]) -> None:
    """The controller principal's secret is in every controller's configuration, and in
    no output, log, plan or store."""
    found = load_state(sandbox).clusters[cluster]
    assert found.controllers, "no controller"
    for node in found.controllers:
        assert secret in controller_properties(sandbox, found, node).read_text()
    stores = list(sandbox.glob("*.db*"))
    assert stores, f"no store found in {sandbox}"
    said = [*said, *(p.read_bytes().decode("latin-1") for p in stores)]
    assert not [text[:80] for text in said if secret in text], "the secret leaked"
