"""A ZooKeeper-mode cluster whose brokers talk SSL (`sandbox up --tls`: a CA of its own,
Kafka's AclAuthorizer, allow.everyone.if.no.acl.found=true) taken to three KRaft
controllers by `kmigrate kraft`, with an acks=all producer and a consumer group over TLS
throughout.

The controller listener is SSL and asks for client certificates; controllers use the
brokers' key and trust stores, so brokers and controllers are the brokers' certificate's
principal there (read by `kraft plan` from the PEM key store), made a super user of the
controllers: a quorum of three elects. `kraft migrate` is SIGKILLed at a seeded moment
of a roll and run again; after finalize every acknowledged record was read once and the
metadata (topics, configs, ACLs, idle offsets, SCRAM credentials, quotas, dynamic broker
configs) reads as before, and with ZooKeeper stopped the cluster serves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import seeded, unique
from harness.killpoints import choose
from harness.killrun import kill_at_point, kmigrate
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft import snapshot
from kmigrate.kraft.plan import load_plan
from kmigrate.sandbox import manager
from kmigrate.sandbox.node_files import controller_properties
from kmigrate.sandbox.properties import read_properties
from kmigrate.sandbox.state import load_state
from tests.integration.kraft import live

CLUSTER = "tlszk"
BROKERS = 2
PRINCIPAL = f"User:CN={CLUSTER} broker"  # the sandbox's broker certificate
ROLLS = ["phase roll1", "roll1: restarting broker 2", "phase roll2", "roll2: restarting broker 2"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("kraft-tls").resolve()
    manager.up(directory, manager.UpRequest(clusters=[CLUSTER], brokers=BROKERS,
                                            zookeeper="zk/kafka", nodes=1, tls=True))  # fmt: skip
    try:
        yield directory
    finally:
        manager.down(directory, purge=True, grace=5)


def test_an_ssl_cluster_migrates_to_three_controllers_that_present_the_brokers_certificate(
    sandbox: Path, tmp_path: Path
) -> None:
    config = sandbox / "clusters.yaml"
    kafka = load_settings(config).cluster(CLUSTER)
    live.furnish(kafka, BROKERS)
    with ClusterAdmin(kafka) as admin:
        before = snapshot.take(admin)
    assert before.scram and before.quotas and len(before.acls) == 4
    plan = tmp_path / "kraft.yaml"
    planned = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", "3",
                         "-o", str(plan))  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert (
        f"SSL with client certificates; brokers and controllers present the brokers' "
        f"certificate, {PRINCIPAL}, a super user of the controllers" in planned.stdout
    )
    assert load_plan(plan).certificate_principal == PRINCIPAL
    assert not (tmp_path / "kraft.yaml.secret").exists(), "no secret: certificates"

    rng = seeded()
    with live.traffic(kafka, BROKERS) as (topic, traffic, group):
        point = choose(rng, ROLLS, span_s=6.0)
        kill_at_point(kmigrate(config, "kraft", "migrate", str(plan)), tmp_path / "kraft.log",
                      point, timeout_s=300)  # fmt: skip
        done = live.kraft(config, "migrate", str(plan))
        assert done.returncode == 0, done.stderr
        finalized = live.kraft(config, "finalize", str(plan), "--yes")
        assert finalized.returncode == 0, finalized.stderr
    live.exactly_once(kafka, topic, traffic, group)

    status = json.loads(live.kraft(config, "status", "--cluster", CLUSTER, "--json").stdout)
    assert status["phase"] == "finalized" and set(status["brokers"].values()) == {"kraft"}
    with ClusterAdmin(kafka) as admin:
        assert snapshot.differences(before, snapshot.take(admin)) == []
        admin.create_topic(unique("after"), 1, replication_factor=BROKERS)  # the quorum serves
    state = load_state(sandbox)
    cluster = state.clusters[CLUSTER]
    assert len(cluster.controllers) == 3
    for node in cluster.controllers:
        found = read_properties(controller_properties(sandbox, cluster, node))
        assert found["listener.security.protocol.map"].endswith(",CONTROLLER:SSL")
        assert found["listener.name.controller.ssl.client.auth"] == "required"
        assert PRINCIPAL in found["super.users"].split(";")
        assert "ANONYMOUS" not in found["super.users"]
    live.serves_without_zookeeper(sandbox, kafka, BROKERS)
