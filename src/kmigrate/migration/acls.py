"""Which ACLs travel with a migration, and copying them to the target.

kmigrate copies the ACLs of the plan's topics and groups (literal, prefixed and
wildcard bindings that cover them). Everything else a principal needs (cluster,
transactional-id and delegation-token bindings) is listed as not copied, with why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import AclEntry

NO_AUTHORIZER = "no authorizer is configured"
NOT_TOPIC_OR_GROUP = "kmigrate copies topic and group ACLs only; create it on the target yourself"


@dataclass(frozen=True)
class AclSupport:
    acls: list[AclEntry] | None  # None: the cluster cannot list ACLs
    problem: str | None


def acl_support(admin: ClusterAdmin) -> AclSupport:
    """The cluster's ACLs, or why it has none to offer (no authorizer, not allowed)."""
    try:
        # Without an authorizer some brokers answer DescribeAcls with an empty list
        # rather than SECURITY_DISABLED; the broker's own setting is the sure sign.
        if not admin.broker_config().get("authorizer.class.name"):
            return AclSupport(None, NO_AUTHORIZER)
        return AclSupport(admin.list_acls(), None)
    except KMigrateError as exc:
        text = exc.message
        if "SECURITY_DISABLED" in text or "uthorizer" in text:
            return AclSupport(None, NO_AUTHORIZER)
        return AclSupport(None, text)


def covers(entry: AclEntry, names: Iterable[str]) -> bool:
    """Whether a binding applies to any of ``names`` (a topic or group resource)."""
    for name in names:
        if entry.pattern_type == "LITERAL" and entry.resource_name in (name, "*"):
            return True
        if entry.pattern_type == "PREFIXED" and name.startswith(entry.resource_name):
            return True
    return False


def split_acls(
    acls: list[AclEntry], topics: list[str], groups: list[str]
) -> tuple[list[AclEntry], list[AclEntry]]:
    """(ACLs to copy, related ACLs that will not be copied) for a plan's topics and groups."""
    chosen = [
        a
        for a in acls
        if (a.resource_type == "TOPIC" and covers(a, topics))
        or (a.resource_type == "GROUP" and covers(a, groups))
    ]
    principals = {a.principal for a in chosen}
    skipped = [
        a for a in acls if a.principal in principals and a.resource_type not in ("TOPIC", "GROUP")
    ]
    return chosen, skipped


def copy_acls(target: ClusterAdmin, wanted: list[AclEntry]) -> tuple[list[AclEntry], str | None]:
    """Create the ``wanted`` bindings the target lacks; returns (created, problem)."""
    support = acl_support(target)
    if support.acls is None:
        return [], support.problem if wanted else None
    have = set(support.acls)
    missing = [a for a in wanted if a not in have]
    if missing:
        target.create_acls(missing)
    return missing, None
