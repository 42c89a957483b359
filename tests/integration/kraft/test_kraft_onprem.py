"""The shape issue 49 was filed on, taken to three KRaft controllers: a ZooKeeper-mode
cluster whose clients log in with SCRAM (SASL_PLAINTEXT) while its brokers talk PLAINTEXT
on a listener of their own, Kafka's AclAuthorizer with
allow.everyone.if.no.acl.found=true and `admin` its only super user (`sandbox up --secure
--internal-plaintext`).

The brokers would reach the controllers as User:ANONYMOUS, which is no super user, so
the controller listener gets kmigrate's own principal. `kraft migrate` is SIGKILLed at a
seeded moment of roll 1 and again in roll 2 after broker 1's restart, run again each
time (the resume says it skips broker 1), then finalized (a "no" at the prompt changes
nothing), while the plain user `client` writes and its group reads over SCRAM: every
acknowledged record read once; metadata (topics, configs, ACLs, idle offsets, SCRAM
credentials, quotas, broker configs) and the authorization probes (asked as the admin
and as `client`, after every phase) as before; `client` still writes only where an ACL
lets it; Kafka's ConfigCommand on the brokers' PLAINTEXT listener (as User:ANONYMOUS) is
still refused by a DENY ACL and still allowed where no ACL names the topic; Kafka's own
tool logs in with SCRAM; revert is refused; `kmigrate serve` agrees; the controller
principal's secret is only in the nodes' files; the brokers' listeners and super users
unchanged; with ZooKeeper stopped the cluster serves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.helpers import run_cli, seeded, unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft import snapshot
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords
from kmigrate.sandbox.node_files import broker_properties, controller_properties
from kmigrate.sandbox.properties import read_properties
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from kmigrate.serve.app import create_app
from tests.integration.kraft import live, scram
from tests.integration.traffic import Group, Traffic

CLUSTER = "onprem"
BROKERS = 2


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
    free = unique("free")  # no ACL names it
    live.furnish(admin_config, BROKERS)
    with ClusterAdmin(admin_config) as admin:
        scram.grants(admin, topic, closed, group)
        admin.create_topic(free, 1)
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
    log = tmp_path / "kraft.log"
    try:
        said = _migrated_killed_in_each_roll(config, plan, log)
    finally:
        traffic.done.set()
        traffic.join(150)
    live.exactly_once(admin_config, topic, traffic, reader)
    with ClusterAdmin(admin_config) as admin:
        assert snapshot.differences(before, snapshot.take(admin)) == []
    said += _after_finalize(sandbox, config, plan, free)  # alters `free`'s retention
    assert scram.writes(client, topic) and not scram.writes(client, closed), "ACLs as before"
    passwords = load_passwords(sandbox.directory, CLUSTER)
    scram.tools_log_in(sandbox, CLUSTER, passwords[ADMIN_USER], topic, tmp_path)
    assert _brokers_listeners(sandbox) == brokers_before, "no client listener changed"
    cluster = load_state(sandbox.directory).clusters[CLUSTER]
    assert len(cluster.controllers) == 3
    for node in cluster.controllers:
        found = read_properties(controller_properties(sandbox.directory, cluster, node))
        assert found["super.users"] == "User:admin;User:kmigrate-controller"
        assert found["listener.security.protocol.map"].endswith(",CONTROLLER:SASL_PLAINTEXT")
    said += [plan.read_text(), log.read_text()]
    live.only_in_the_nodes_files(sandbox.directory, CLUSTER, secret, said)
    live.serves_without_zookeeper(sandbox.directory, admin_config, BROKERS)


def _migrated_killed_in_each_roll(config: Path, plan: Path, log: Path) -> list[str]:
    """`kraft migrate` SIGKILLed in roll 1, then in roll 2 after broker 1's restart, run
    again each time; `kraft finalize` answered "no" (nothing changes), then --yes. What
    the finishing runs said."""
    rng = seeded()
    live.killed_in(config, log, "roll1", rng, "migrate", str(plan))
    roll2 = live.killed_in(config, log, "roll2", rng, "migrate", str(plan), after_broker_1=True)
    done = live.kraft(config, "migrate", str(plan))
    assert done.returncode == 0, done.stderr
    if roll2.exit_code is None:  # else it finished within the random delay
        assert "roll2: broker 1 already in kraft mode" in done.stderr, "a resume says so"
    refused = live.kraft(config, "finalize", str(plan), input_text="n\n")
    assert refused.returncode == 0 and "POINT OF NO RETURN" in refused.stdout
    assert "nothing changed" in refused.stderr
    finalized = live.kraft(config, "finalize", str(plan), "--yes")
    assert finalized.returncode == 0, finalized.stderr
    return [r.stdout + r.stderr for r in (done, refused, finalized)]


def _after_finalize(state: SandboxState, config: Path, plan: Path, free: str) -> list[str]:
    """What a user checks once finalized: the probes ran after every phase, the killed
    runs' lock was taken over, there is no way back, who may do what as Kafka's own tool
    finds it (as User:ANONYMOUS on the brokers' own PLAINTEXT listener: the DENY on
    kept-0 still refuses, with the controllers trusting ANONYMOUS as a super user it did
    not; ``free``, which no ACL names, is still allowed by
    allow.everyone.if.no.acl.found), and `kmigrate serve` agrees. What they said."""
    history = live.kraft(config, "history", "--cluster", CLUSTER, "--json").stdout
    events = json.loads(history)["events"]
    assert any(e["phase"] == "lock" for e in events), "the killed runs' lock taken over"
    probed = [e["detail"] for e in events if e["step"] == "authorization unchanged"]
    assert len(probed) >= 5, "authorization probed after every phase and before finalizing"
    no_way_back = live.kraft(config, "revert", str(plan), "--yes")
    assert no_way_back.returncode != 0 and "no way back" in no_way_back.stderr
    internal = f"127.0.0.1:{state.clusters[CLUSTER].brokers[0].controller_port}"
    denied = live.alter_config(internal, "kept-0")
    assert denied.returncode != 0 and "TopicAuthorizationException" in denied.stderr
    allowed = live.alter_config(internal, free)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    with TestClient(create_app(load_settings(config))) as api:
        served = api.get(f"/api/kraft/{CLUSTER}").json()
    assert served.get("phase") == "finalized" and served["brokers"] == [1, 2], served
    status = live.kraft(config, "status", "--cluster", CLUSTER, "--json").stdout
    return [history, status, json.dumps(served)]


def _brokers_listeners(state: SandboxState) -> list[tuple[str, ...]]:
    """Each broker's client-facing settings: listeners, SASL mechanisms, super users."""
    cluster = load_state(state.directory).clusters[CLUSTER]
    found = [
        read_properties(broker_properties(state.directory, cluster, b)) for b in cluster.brokers
    ]
    keys = ("listeners", "advertised.listeners", "sasl.enabled.mechanisms", "super.users")
    return [tuple(f.get(k, "") for k in keys) for f in found]
