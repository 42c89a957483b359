"""The plan document and the migration's state rules: pure logic, no broker."""

from __future__ import annotations

import re

import pytest

from kmigrate.errors import ConfigError
from kmigrate.migration.acls import split_acls
from kmigrate.migration.plan import Plan, PlannedGroup, PlannedTopic, parse_plan
from kmigrate.model.cluster import AclEntry
from kmigrate.model.migrations import (
    SwitchOrder,
    TopicPhase,
    after_groups_moved,
    promotable,
    retirable,
)

CF, PF = SwitchOrder.CONSUMERS_FIRST, SwitchOrder.PRODUCERS_FIRST


def _plan(**extra: object) -> Plan:
    return Plan(
        name="m1",
        source="a",
        target="b",
        topics=[PlannedTopic(name="orders.v1", partitions=3), PlannedTopic(name="x", partitions=1)],
        groups=[PlannedGroup(name="billing", topics=["orders.v1"], members=2, lag=5)],
        **extra,  # type: ignore[arg-type]
    )


def test_a_written_plan_reads_back_equal() -> None:
    plan = _plan(switch_order=PF, quiet_period_s=3.5)
    assert parse_plan(plan.to_yaml("p.yaml"), "p.yaml") == plan


def test_the_link_regex_matches_exactly_the_planned_names() -> None:
    regex = re.compile(_plan().topics_regex(["orders.v1"]))
    assert regex.fullmatch("orders.v1")
    assert not regex.fullmatch("ordersXv1")
    assert not regex.fullmatch("x")
    assert not re.compile(_plan().topics_regex([])).fullmatch("anything")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: [", "bad YAML at line 1"),
        ("- a", "a plan is a mapping"),
        ("name: m\nsource: a\ntarget: b\n", "topics: field required"),
        ("name: m\nsource: a\ntarget: b\ntopics: []\n", "the plan has no topics"),
        (
            "name: m\nsource: a\ntarget: b\ntopics: [{name: t, partitions: 0}]\n",
            "topics.0.partitions",
        ),
        (
            "name: m\nsource: a\ntarget: b\ntopics: [{name: t, partitions: 1}]\n"
            "groups: [{name: g, topics: [u]}]\n",
            "group g reads u, which is not among the plan's topics",
        ),
        (
            "name: m\nsource: a\ntarget: a\ntopics: [{name: t, partitions: 1}]\n",
            "source and target are the same cluster",
        ),
        (
            "name: m\nsource: a\ntarget: b\nswitch_order: sideways\n"
            "topics: [{name: t, partitions: 1}]\n",
            "switch_order",
        ),
    ],
)
def test_a_bad_plan_is_one_line_naming_what_to_fix(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_plan(text, "p.yaml")
    assert fragment in info.value.message
    assert "\n" not in info.value.message
    assert info.value.message.startswith("p.yaml: ")


def test_consumers_first_promotes_after_the_consumers_moved() -> None:
    assert not promotable(TopicPhase.IN_SYNC, CF, has_groups=True)
    assert promotable(TopicPhase.CONSUMERS_MOVED, CF, has_groups=True)
    assert promotable(TopicPhase.IN_SYNC, CF, has_groups=False)
    assert not promotable(TopicPhase.MIRRORING, CF, has_groups=False)
    assert retirable(TopicPhase.PROMOTED, CF, has_groups=True)
    assert after_groups_moved(TopicPhase.IN_SYNC, CF) is TopicPhase.CONSUMERS_MOVED
    assert after_groups_moved(TopicPhase.PROMOTED, CF) is None


def test_producers_first_moves_the_consumers_after_promote() -> None:
    assert promotable(TopicPhase.IN_SYNC, PF, has_groups=True)
    assert not promotable(TopicPhase.CONSUMERS_MOVED, PF, has_groups=True)
    assert after_groups_moved(TopicPhase.PROMOTED, PF) is TopicPhase.CONSUMERS_MOVED
    assert after_groups_moved(TopicPhase.IN_SYNC, PF) is None
    assert not retirable(TopicPhase.PROMOTED, PF, has_groups=True)
    assert retirable(TopicPhase.CONSUMERS_MOVED, PF, has_groups=True)
    assert retirable(TopicPhase.PROMOTED, PF, has_groups=False)


def _acl(kind: str, name: str, pattern: str = "LITERAL", who: str = "User:app") -> AclEntry:
    return AclEntry(kind, name, pattern, who, "*", "READ", "ALLOW")


def test_the_acls_of_planned_topics_and_groups_travel_and_the_rest_is_listed() -> None:
    acls = [
        _acl("TOPIC", "orders"),
        _acl("TOPIC", "ord", "PREFIXED"),
        _acl("TOPIC", "*"),
        _acl("TOPIC", "payments"),
        _acl("GROUP", "billing"),
        _acl("GROUP", "other"),
        _acl("TRANSACTIONAL_ID", "tx-1"),
        _acl("CLUSTER", "kafka-cluster", who="User:nobody-in-plan"),
    ]
    copied, skipped = split_acls(acls, ["orders"], ["billing"])
    assert copied == [acls[0], acls[1], acls[2], acls[4]]
    assert skipped == [acls[6]]


def test_a_via_gateway_plan_reads_back_and_switches_consumers_first() -> None:
    plan = _plan(via_gateway=True)
    assert parse_plan(plan.to_yaml("p.yaml"), "p.yaml").via_gateway
    with pytest.raises(ConfigError, match="via_gateway migrations switch consumers first"):
        parse_plan(_plan(via_gateway=True, switch_order=PF).to_yaml(), "p.yaml")


def test_via_gateway_needs_its_topics_unrouted_or_on_the_source() -> None:
    from kmigrate.gateway.control.partition_moves import Migration, Mode, Status
    from kmigrate.gateway.control.routes import RoutingTable
    from kmigrate.migration.via_gateway import check_routes

    plan = _plan(via_gateway=True)
    assert check_routes(RoutingTable(), plan) == []
    assert check_routes(RoutingTable().with_route("orders.v1", "a"), plan) == []
    elsewhere = RoutingTable().with_route("orders.v1", "a").with_route("orders.v1", "c", [2])
    assert check_routes(elsewhere, plan) == [
        "topic orders.v1 is routed to a, c in the gateway; the migration needs it on the source 'a'"
    ]
    moved = Migration("a", "b", Status.MIGRATED, 1, Mode.SMOOTH, 5, 0)
    migrated = RoutingTable().with_route("x", "a").with_migration("x", 0, moved, replace_last=False)
    assert check_routes(migrated, plan) == [
        "topic x has partition migrations in the gateway already"
    ]
