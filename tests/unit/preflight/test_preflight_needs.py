"""The preflight's pure half: which operations each kmigrate role needs, compared with
the operations Kafka reports; the metadata mode and version from a broker's settings."""

from __future__ import annotations

import pytest

from kmigrate.preflight.needs import (
    NEEDS,
    ROLES,
    Authorized,
    compare,
    effective,
    missing,
    role_status,
)
from kmigrate.preflight.platform import kafka_version, metadata_mode

EVERYTHING = frozenset({"ALL"})
TOPIC_RW = frozenset({"READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"})


def _lines(authorized: Authorized, roles: tuple[str, ...] = ROLES) -> list[str]:
    return [f.line for f in missing(compare(authorized, roles))]


def test_every_role_has_needs_and_every_need_a_known_role() -> None:
    assert {n.role for n in NEEDS} == set(ROLES)
    assert all(n.why for n in NEEDS)


def test_all_grants_every_need() -> None:
    authorized = Authorized(EVERYTHING, {"orders": EVERYTHING}, {"app": EVERYTHING})
    findings = compare(authorized)
    assert all(f.ok for f in findings)
    assert all(role_status(findings, role) == "ok" for role in ROLES)


@pytest.mark.parametrize(
    ("granted", "implied"),
    [
        ({"READ"}, "DESCRIBE"),
        ({"WRITE"}, "DESCRIBE"),
        ({"ALTER"}, "DESCRIBE"),
        ({"DELETE"}, "DESCRIBE"),
        ({"ALTER_CONFIGS"}, "DESCRIBE_CONFIGS"),
        ({"all"}, "CREATE"),
    ],
)
def test_implied_operations(granted: set[str], implied: str) -> None:
    assert implied in effective(granted)


def test_a_target_without_cluster_create_names_the_operation_and_the_role() -> None:
    authorized = Authorized(frozenset({"DESCRIBE"}), {"orders": TOPIC_RW}, {})
    assert _lines(authorized, ("mirror target",)) == [
        "mirror target: cannot CREATE topics (cluster authorization), "
        "needed to create the topic copies"
    ]


def test_create_granted_on_every_topic_seen_replaces_cluster_create() -> None:
    authorized = Authorized(frozenset(), {"orders": TOPIC_RW | {"CREATE"}}, {})
    assert _lines(authorized, ("mirror target",)) == []


def test_a_topic_need_names_the_topics_that_lack_it() -> None:
    readable = frozenset({"READ", "DESCRIBE_CONFIGS"})
    topics = {"a": readable, "b": frozenset({"DESCRIBE"}), "c": frozenset(), "d": readable}
    lines = _lines(Authorized(EVERYTHING, topics, {}), ("mirror source",))
    assert lines == [
        "mirror source: cannot DESCRIBE topics (c of 4 topic(s)), "
        "needed to list and describe the topics",
        "mirror source: cannot READ topics (b, c of 4 topic(s)), needed to read the records",
        "mirror source: cannot DESCRIBE_CONFIGS topics (b, c of 4 topic(s)), "
        "needed to copy the topic configs",
    ]


def test_many_topics_lacking_are_shortened() -> None:
    topics = {f"t{i}": frozenset() for i in range(10)}
    (line, *_) = _lines(Authorized(EVERYTHING, topics, {}), ("mirror source",))
    assert "(t0, t1, t2 and 7 more of 10 topic(s))" in line


def test_nothing_seen_is_unchecked_not_missing() -> None:
    findings = compare(Authorized(EVERYTHING, {}, {}), ("group moves",))
    assert [f.ok for f in findings] == [None, None, None]
    assert missing(findings) == []
    assert role_status(findings, "group moves") == "ok (3 unchecked)"
    assert "did not check READ groups (no group visible to check it on)" in findings[2].line


def test_reassign_needs_the_cluster_operations() -> None:
    authorized = Authorized(frozenset({"DESCRIBE", "DESCRIBE_CONFIGS"}), {"a": EVERYTHING}, {})
    lines = _lines(authorized, ("reassign",))
    assert [line.split(" (")[0] for line in lines] == [
        "reassign: cannot ALTER the cluster",
        "reassign: cannot ALTER_CONFIGS the cluster",
    ]
    assert role_status(compare(authorized, ("reassign",)), "reassign") == "missing 2"


def test_a_cluster_that_did_not_report_is_unchecked() -> None:
    findings = compare(Authorized(None, {"a": EVERYTHING}, {}), ("reassign",))
    assert {f.ok for f in findings if f.need.resource == "cluster"} == {None}


def test_group_needs_on_groups() -> None:
    groups = {"app": frozenset({"DESCRIBE"}), "etl": frozenset({"READ"})}
    lines = _lines(Authorized(EVERYTHING, {"a": EVERYTHING}, groups), ("gateway backend",))
    assert lines == [
        "gateway backend: cannot READ groups (app of 2 group(s)), "
        "needed to serve clients' consumer groups"
    ]


@pytest.mark.parametrize(
    ("facts", "mode", "version"),
    [
        ({"process.roles": "broker", "inter.broker.protocol.version": "3.9-IV0"}, "KRaft", "3.9"),
        ({"process.roles": "broker,controller"}, "KRaft", "4.0 or later"),
        (
            {"zookeeper.connect": "zk:2181", "inter.broker.protocol.version": "3.7-IV4"},
            "ZooKeeper",
            "3.7",
        ),
        (
            {"zookeeper.connect": "zk:2181", "zookeeper.metadata.migration.enable": "true"},
            "ZooKeeper (migrating to KRaft)",
            "unknown",
        ),
        (
            {"process.roles": "broker", "zookeeper.metadata.migration.enable": "true"},
            "KRaft (migrating from ZooKeeper)",
            "4.0 or later",
        ),
        ({}, "unknown", "unknown"),
    ],
)
def test_mode_and_version_from_broker_settings(
    facts: dict[str, str], mode: str, version: str
) -> None:
    assert (metadata_mode(facts), kafka_version(facts)) == (mode, version)
