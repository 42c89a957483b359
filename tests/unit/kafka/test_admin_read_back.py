"""Changing ACLs, SCRAM credentials or configs returns once the broker shows the change
(KRaft applies a committed change a moment after the controller answers)."""

from __future__ import annotations

from kmigrate.kafka.admin.acls import settled
from kmigrate.kafka.admin.configs import configs_settled
from kmigrate.model.cluster import AclEntry

WRITE = AclEntry("TOPIC", "orders", "LITERAL", "User:app", "*", "WRITE", "ALLOW")
READ = AclEntry("TOPIC", "orders", "LITERAL", "User:app", "*", "READ", "ALLOW")
OTHER = AclEntry("GROUP", "billing", "LITERAL", "User:app", "*", "READ", "ALLOW")


def test_created_bindings_are_settled_only_when_all_are_listed() -> None:
    assert not settled([WRITE, READ], [OTHER], present=True)
    assert not settled([WRITE, READ], [WRITE, OTHER], present=True)
    assert settled([WRITE, READ], [OTHER, READ, WRITE], present=True)


def test_deleted_bindings_are_settled_only_when_none_is_listed() -> None:
    assert not settled([WRITE, READ], [READ], present=False)
    assert settled([WRITE, READ], [OTHER], present=False)
    assert settled([], [OTHER], present=False)


def test_configs_are_settled_when_every_value_set_is_described_and_none_removed() -> None:
    changes = {"leader.replication.throttled.replicas": "0:1", "retention.ms": None}
    assert not configs_settled(changes, {"retention.ms": "1000"})
    assert not configs_settled(changes, {"leader.replication.throttled.replicas": "0:2"})
    assert configs_settled(changes, {"leader.replication.throttled.replicas": "0:1"})


def test_a_sensitive_config_is_settled_once_described_at_all() -> None:
    assert configs_settled({"sasl.jaas.config": "secret"}, {"sasl.jaas.config": None})
    assert not configs_settled({"sasl.jaas.config": "secret"}, {})
