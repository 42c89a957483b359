"""The ACLs of a plan's topics and groups travel to the target; the rest is listed."""

from __future__ import annotations

from pathlib import Path

from harness.helpers import unique, wait_for
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.acls import copy_acls
from kmigrate.migration.authorization import target_differences
from kmigrate.migration.check import check_plan
from kmigrate.migration.planner import new_plan
from kmigrate.model.cluster import AclEntry, TopicPartitionOffset
from kmigrate.model.migrations import SwitchOrder
from kmigrate.sandbox.clusters_yaml import cluster_config
from kmigrate.sandbox.state import CLIENT_USER, SandboxState
from kmigrate.store import open_store
from tests.integration.conftest import Clusters


def test_plan_lists_the_acls_and_start_copies_them_once(
    secure: SandboxState, clusters: Clusters, tmp_path: Path
) -> None:
    settings = load_settings(secure.directory / "clusters.yaml")
    topic, group, app = unique("acl-t"), unique("acl-g"), f"User:{unique('app')}"
    grants = [
        AclEntry("TOPIC", topic, "LITERAL", app, "*", "READ", "ALLOW"),
        AclEntry("TOPIC", topic[:6], "PREFIXED", app, "*", "WRITE", "ALLOW"),
        AclEntry("GROUP", group, "LITERAL", app, "*", "READ", "ALLOW"),
        AclEntry("TRANSACTIONAL_ID", "tx-1", "LITERAL", app, "*", "WRITE", "ALLOW"),
        AclEntry("TOPIC", unique("other"), "LITERAL", app, "*", "READ", "ALLOW"),
    ]
    with ClusterAdmin(settings.cluster("locked")) as source:
        source.create_topic(topic, 2)
        source.create_acls(grants)
        source.alter_group_offsets(group, [TopicPartitionOffset(topic, 0, 0)])
        plan = new_plan(
            source,
            target="vault",
            topics=topic,
            groups=group,
            order=SwitchOrder.CONSUMERS_FIRST,
            name=unique("m"),
        )
    assert sorted(a.entry() for a in plan.acls) == sorted(grants[:3])
    assert [a.entry() for a in plan.acls_not_copied] == [grants[3]]
    assert "copies topic and group ACLs only" in plan.acls_not_copied[0].reason

    with ClusterAdmin(settings.cluster("vault")) as target:
        created, problem = copy_acls(target, [a.entry() for a in plan.acls])
        assert (sorted(created), problem) == (sorted(grants[:3]), None)
        assert set(grants[:3]) <= set(target.list_acls())
        assert grants[3] not in target.list_acls()
        assert copy_acls(target, [a.entry() for a in plan.acls]) == ([], None)

    # A target without an authorizer cannot take them: plan check says so up front.
    store = open_store(f"sqlite:///{tmp_path / 'k.db'}")
    with (
        ClusterAdmin(settings.cluster("locked")) as source,
        ClusterAdmin(clusters.target) as plain,
    ):
        report = check_plan(plan, store, source, plain, sample_s=0.5)
    assert any(
        "cannot take the plan's 3 ACL(s) (no authorizer is configured)" in p
        for p in report.problems
    ), report.problems


def test_promote_finds_a_target_that_would_let_a_client_do_more(secure: SandboxState) -> None:
    """`migrate promote` refuses a target that answers the promoted topics' probes
    unlike the source, asked as the same principal (here the sandbox's plain user)."""
    source, target = (
        cluster_config(secure, secure.clusters[n], user=CLIENT_USER) for n in ("locked", "vault")
    )
    settings = load_settings(secure.directory / "clusters.yaml")
    topic, group, who = unique("authz-t"), unique("authz-g"), f"User:{CLIENT_USER}"
    reads = [AclEntry("TOPIC", topic, "LITERAL", who, "*", op, "ALLOW")
             for op in ("DESCRIBE", "DESCRIBE_CONFIGS")]  # fmt: skip
    wider = AclEntry("TOPIC", topic, "LITERAL", who, "*", "ALL", "ALLOW")
    for name, grants in (("locked", reads), ("vault", [wider])):
        with ClusterAdmin(settings.cluster(name)) as admin:
            admin.create_topic(topic, 1)
            admin.create_acls(grants)

    def changed() -> list[str]:
        with ClusterAdmin(source) as src, ClusterAdmin(target) as tgt:
            return target_differences(reads, [topic], [group], src, tgt)

    wait_for(lambda: bool(changed()), timeout=30, message="the target's wider ACL to show")
    assert changed() == [
        f"{who}: alter-config {topic}: was denied (TOPIC_AUTHORIZATION_FAILED), now allowed"
    ]
    with ClusterAdmin(settings.cluster("vault")) as admin:
        admin.create_acls(reads)
        admin.delete_acls([wider])
    wait_for(lambda: changed() == [], timeout=30, message="the same ACLs to answer the same")
