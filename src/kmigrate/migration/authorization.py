"""Who may do what on the promoted topics, on the target as on the source: the
authorization probes for the plan's topics and groups (chosen from the plan's ACLs),
asked of both clusters as the same principal. A target that would let a client do
what the source refused, or refuse what it allowed, is a difference."""

from __future__ import annotations

from collections.abc import Iterable

from kmigrate.authz.ask import answers, principal_of
from kmigrate.authz.probes import Probe, choose, differences
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import AclEntry

SCOPED = ("alter-config", "describe-configs", "describe-group")  # one topic's or group's


def target_differences(
    acls: Iterable[AclEntry],
    topics: list[str],
    groups: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
) -> list[str]:
    """Each probe of ``topics`` and ``groups`` the target answers unlike the source;
    nothing when kmigrate reaches the two as different principals (nothing to compare)."""
    if principal_of(source.cluster) != principal_of(target.cluster):
        return []
    scope = set(topics) | set(groups)
    probes = [p for p in choose(acls, topics) if p.action in SCOPED and p.resource in scope] + [
        Probe("describe-group", g) for g in groups
    ]
    unique = sorted(set(probes))
    return differences(answers(source, unique), answers(target, unique))
