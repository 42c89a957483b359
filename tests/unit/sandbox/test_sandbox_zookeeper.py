"""The sandbox's ZooKeeper files and ZooKeeper-mode broker configs (pure rendering)."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest

from kmigrate.config import parse_settings
from kmigrate.errors import ConfigError, UnknownClusterError
from kmigrate.sandbox.manager import UpRequest, _check_request, _split_zookeeper
from kmigrate.sandbox.properties import server_properties
from kmigrate.sandbox.scram import scram_credential, user_znode
from kmigrate.sandbox.state import BrokerNode, SandboxCluster, SandboxEnsemble, ZkNode
from kmigrate.sandbox.zookeeper import dynamic_cfg, zoo_cfg

NODES = (ZkNode(1, 2181, 2888, 3888), ZkNode(2, 2182, 2889, 3889), ZkNode(3, 2183, 2890, 3890))


def _kv(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_a_node_runs_with_dynamic_reconfiguration_and_no_standalone_mode() -> None:
    cfg = _kv(zoo_cfg(NODES[0], Path("/d/data"), Path("/d/zoo.cfg.dynamic")))
    assert cfg["reconfigEnabled"] == "true" and cfg["standaloneEnabled"] == "false"
    assert cfg["dynamicConfigFile"] == "/d/zoo.cfg.dynamic"
    assert "clientPort" not in cfg, "the client port lives in the dynamic file"
    assert cfg["admin.enableServer"] == "false"
    # Kafka asks for 18 s sessions; ZooKeeper caps them at 20 ticks.
    assert int(cfg["tickTime"]) * 20 >= 18000


def test_the_dynamic_file_lists_every_member_on_loopback() -> None:
    text = dynamic_cfg(reversed(NODES))
    assert text.splitlines() == [
        "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181",
        "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
        "server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183",
    ]
    assert SandboxEnsemble("zk", "3.9.1", NODES).connect == (
        "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    )


def test_a_zookeeper_mode_broker_has_no_controller_settings() -> None:
    broker = BrokerNode(node_id=2, port=19093, controller_port=29093, rack="r", voter=True)
    cluster = SandboxCluster("old", "id", "3.9.1", False, (broker,), "127.0.0.1:2181/kafka")
    props = _kv(server_properties(cluster, broker, Path("/data"), None))
    assert props["broker.id"] == "2"
    assert props["zookeeper.connect"] == "127.0.0.1:2181/kafka"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19093"
    for key in ("process.roles", "node.id", "controller.quorum.voters"):
        assert key not in props
    kraft_props = _kv(
        server_properties(replace(cluster, zookeeper_connect=None), broker, Path("/d"), None)
    )
    assert "zookeeper.connect" not in kraft_props and kraft_props["node.id"] == "2"


def test_a_secure_zookeeper_mode_broker_speaks_only_scram_and_trusts_only_the_admin() -> None:
    broker = BrokerNode(node_id=1, port=19093, controller_port=29093, rack="r", voter=True)
    cluster = SandboxCluster("old", "id", "3.9.1", True, (broker,), "127.0.0.1:2181/kafka")
    props = _kv(server_properties(cluster, broker, Path("/data"), "pw-1"))
    assert props["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19093"
    assert props["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT"
    assert props["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert (
        'username="admin" password="pw-1"'
        in (props["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"])
    )
    assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    # Nothing is anonymous on a SASL-only ZooKeeper-mode cluster: no ANONYMOUS super user.
    assert props["super.users"] == "User:admin"


def test_a_scram_credential_is_the_one_kafkas_config_command_writes() -> None:
    """Kafka 3.9.1's `ConfigCommand --zookeeper ... --add-config SCRAM-SHA-512=[password=
    s3cretXY]` wrote this credential (its salt, the password, 4096 iterations)."""
    salt = base64.b64decode("NDMzZmpka2JlaTJ6ZHhqeHdkYThnZWxhZQ==")
    assert scram_credential("s3cretXY", salt) == (
        "salt=NDMzZmpka2JlaTJ6ZHhqeHdkYThnZWxhZQ==,"
        "stored_key=8dIAKs2WSUmVj430Nxttf8c+B2x70AmLqG+wyi5ZbSXABaUR2ZVCIrIqaJL+LQP60o8/pgwI8QQ"
        "/HScwMFeeYg==,"
        "server_key=S0alBSowlSWiZ6/4RoJ18e7/bXM1tIvEEuRbSrxSKusRA680dQxjW2ETXO121BNNRNFsmgHPy7m"
        "N3ZSx5UlEgQ==,"
        "iterations=4096"
    )
    document = json.loads(user_znode("pw"))
    assert document["version"] == 1 and list(document["config"]) == ["SCRAM-SHA-512"]


def test_zookeeper_names_split_into_ensemble_and_chroot() -> None:
    assert _split_zookeeper("zk") == ("zk", "")
    assert _split_zookeeper("zk/kafka") == ("zk", "/kafka")
    assert _split_zookeeper("zk/a/b/") == ("zk", "/a/b")
    assert UpRequest(clusters=[], ensembles=["a"], zookeeper="b/k").ensemble_names() == ["a", "b"]


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        (UpRequest(clusters=["x"], zookeeper="zk", kafka_version="4.3.1"), "no ZooKeeper mode"),
        (UpRequest(clusters=[], ensembles=["Bad_Name"]), "not valid"),
        (UpRequest(clusters=[], ensembles=["zk"], nodes=9), "--nodes"),
    ],
)
def test_impossible_requests_are_refused_before_anything_starts(
    request_: UpRequest, says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        _check_request(request_)


def test_clusters_yaml_lists_ensembles_and_may_hold_only_them(tmp_path: Path) -> None:
    settings = parse_settings(
        "zookeeper:\n  old-zk:\n    connect: [127.0.0.1:2181, 127.0.0.1:2182]\n",
        tmp_path / "clusters.yaml",
    )
    assert settings.ensemble("old-zk").connect == "127.0.0.1:2181,127.0.0.1:2182"
    assert settings.ensemble("old-zk").name == "old-zk"
    with pytest.raises(UnknownClusterError, match="known ensembles: old-zk"):
        settings.ensemble("new-zk")
    with pytest.raises(ConfigError, match="'zookeeper:' must map"):
        parse_settings(
            "clusters: {a: {bootstrap_servers: x:1}}\nzookeeper: [1]\n", tmp_path / "c.yaml"
        )
