"""Which requests show how a cluster authorizes (pure): for every resource its ACLs
name, the request those ACLs decide (altering a topic's config, describing it, creating
a topic under a prefix, reading a group's offsets); one topic and one new topic no ACL
names (what `allow.everyone.if.no.acl.found` decides); listing ACLs (the cluster).

Every probe is side-effect free: configs and topics are only validated, the rest read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kmigrate.model.cluster import AclEntry

PROBE_NAME = "kmigrate-authz-probe"  # the topic or group a create/read probe names
MAX_PER_KIND = 6  # resources per kind of ACL: a few show the rules, thousands cost minutes


@dataclass(frozen=True, order=True)
class Probe:
    action: str  # alter-config | describe-configs | create-topic | describe-group | describe-acls
    resource: str  # a topic, a group, or "" for the cluster

    @property
    def key(self) -> str:
        return f"{self.action} {self.resource}".rstrip()


def choose(acls: Iterable[AclEntry], topics: Iterable[str]) -> list[Probe]:
    """The probes for a cluster with ``acls`` and ``topics`` (internal ones excluded)."""
    existing = sorted(t for t in topics if not t.startswith("__"))
    entries = list(acls)
    found: set[Probe] = {Probe("describe-acls", "")}
    found |= _topic_probes(entries, existing)
    found |= _group_probes(entries)
    return sorted(found)


def _topic_probes(acls: list[AclEntry], topics: list[str]) -> set[Probe]:
    literal = _named(acls, "TOPIC", "LITERAL")
    prefixes = _named(acls, "TOPIC", "PREFIXED")
    found: set[Probe] = set()
    for topic in [t for t in literal if t in topics][:MAX_PER_KIND]:
        found |= {Probe("alter-config", topic), Probe("describe-configs", topic)}
    for prefix in prefixes[:MAX_PER_KIND]:
        found.add(Probe("create-topic", prefix + PROBE_NAME))
        under = next((t for t in topics if t.startswith(prefix)), None)
        if under is not None:
            found.add(Probe("alter-config", under))
    unnamed = [t for t in topics if t not in literal and not _under(t, prefixes)]
    if unnamed:
        found |= {Probe("alter-config", unnamed[0]), Probe("describe-configs", unnamed[0])}
    found.add(Probe("create-topic", PROBE_NAME))
    return found


def _group_probes(acls: list[AclEntry]) -> set[Probe]:
    literal = _named(acls, "GROUP", "LITERAL")
    prefixes = _named(acls, "GROUP", "PREFIXED")
    groups = literal[:MAX_PER_KIND] + [p + PROBE_NAME for p in prefixes[:MAX_PER_KIND]]
    return {Probe("describe-group", g) for g in [*groups, PROBE_NAME]}


def _named(acls: list[AclEntry], resource_type: str, pattern: str) -> list[str]:
    return sorted(
        {
            a.resource_name
            for a in acls
            if a.resource_type == resource_type
            and a.pattern_type == pattern
            and a.resource_name != "*"
        }
    )


def _under(name: str, prefixes: list[str]) -> bool:
    return any(name.startswith(p) for p in prefixes)


Answers = dict[str, str]  # "<identity>: <probe key>" -> "allowed" | "denied (...)"


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Each probe answered differently (pure), as "who: what was X, now Y"; probes only
    one side asked are not compared (a topic deleted meanwhile)."""
    return [
        f"{key}: was {was}, now {after[key]}"
        for key, was in sorted(before.items())
        if key in after and after[key] != was
    ]
