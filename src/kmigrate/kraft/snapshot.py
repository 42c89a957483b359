"""The cluster's metadata as users see it, read before and after every step of a
migration and compared field by field: topics, their partitions and replicas, their
configs, ACLs, committed group offsets, SCRAM credentials (mechanism and iterations:
Kafka never returns passwords) and the dynamic broker configs (each broker's and the
cluster-wide default). A group with members consumes meanwhile, so its offsets may only
grow; an idle group's must read the same. It reads as the client clusters.yaml
configures: what ACLs hide from that principal it cannot compare.

Client quotas are compared too (``quotas``: every entity and value, read through
kmigrate.kafka.quotas, as confluent-kafka has no DescribeClientQuotas; the kill-point
sweep reads them with Kafka's own ConfigCommand instead)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.model.quotas import entity_text


@dataclass(frozen=True)
class Snapshot:
    topics: dict[str, dict[str, list[int]]]  # topic -> partition -> replicas
    configs: dict[str, dict[str, str]]  # topic -> configs set on it
    acls: list[str]
    groups: dict[str, dict[str, int]]  # group -> "topic[p]" -> committed offset
    active: list[str]  # groups with members when read
    scram: dict[str, list[str]] = field(default_factory=dict)  # user -> "MECHANISM/ITERATIONS"
    brokers: dict[str, dict[str, str]] = field(default_factory=dict)  # id or "default" -> set
    quotas: dict[str, dict[str, str]] = field(default_factory=dict)  # entity -> quota -> value
    # False in a snapshot stored before kmigrate read quotas: a migration started then and
    # resumed now compares everything else, not quotas it never read
    quotas_read: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        return cls(**json.loads(text))

    @property
    def summary(self) -> str:
        partitions = sum(len(p) for p in self.topics.values())
        return (
            f"{len(self.topics)} topics, {partitions} partitions, {len(self.acls)} ACLs, "
            f"{len(self.groups)} groups, {len(self.scram)} SCRAM users, "
            f"{len(self.brokers)} broker config sets"
            + (f", {len(self.quotas)} quota entities" if self.quotas else "")
        )


def take(admin: ClusterAdmin) -> Snapshot:
    topics = admin.list_topics()
    names = [t.name for t in topics]
    groups: dict[str, dict[str, int]] = {}
    active: list[str] = []
    for g in admin.list_groups():
        try:
            info = admin.describe_group(g.group_id)
            offsets = admin.committed_offsets(g.group_id)
        except KMigrateError:
            continue  # a group deleted while read
        if info.members:
            active.append(g.group_id)
        groups[g.group_id] = {f"{o.topic}[{o.partition}]": o.committed for o in offsets}
    return Snapshot(
        topics={t.name: {str(p.partition): list(p.replicas) for p in t.partitions} for t in topics},
        configs=admin.topic_configs(names) if names else {},
        acls=_acls(admin),
        groups=groups,
        active=sorted(active),
        scram=admin.scram_credentials(),
        brokers=admin.broker_configs([b.node_id for b in admin.describe_cluster().brokers]),
        quotas=_quotas(admin),
        quotas_read=True,
    )


def _quotas(admin: ClusterAdmin) -> dict[str, dict[str, str]]:
    """Every client quota: "user 'alice', client-id 'app'" -> quota -> value."""
    with ClientQuotas(admin.cluster) as quotas:
        found = quotas.describe()
    return {
        entity_text(entity): {k: _number(v) for k, v in sorted(values.items())}
        for entity, values in sorted(found.items(), key=lambda item: entity_text(item[0]))
    }


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _acls(admin: ClusterAdmin) -> list[str]:
    """Every ACL binding as one line; none on a cluster without an authorizer (which
    refuses to list them)."""
    if not admin.broker_config().get("authorizer.class.name"):
        return []
    return sorted(
        f"{a.permission} {a.principal} {a.operation} {a.resource_type}:"
        f"{a.pattern_type}:{a.resource_name} from {a.host}"
        for a in admin.list_acls()
    )


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """What changed that must not (pure); empty when the metadata reads the same.
    Topics and groups created meanwhile are not differences."""
    found: list[str] = []
    for topic, partitions in sorted(before.topics.items()):
        now = after.topics.get(topic)
        if now is None:
            found.append(f"topic {topic} is gone")
            continue
        if sorted(now) != sorted(partitions):
            found.append(f"topic {topic}: {len(partitions)} partitions, now {len(now)}")
        for p, replicas in sorted(partitions.items()):
            if p in now and now[p] != replicas:
                found.append(f"{topic}[{p}]: replicas {replicas}, now {now[p]}")
        if before.configs.get(topic, {}) != after.configs.get(topic, {}):
            was, now_configs = before.configs.get(topic), after.configs.get(topic)
            found.append(f"topic {topic}: configs {was}, now {now_configs}")
    for acl in sorted(set(before.acls) - set(after.acls)):
        found.append(f"ACL gone: {acl}")
    for acl in sorted(set(after.acls) - set(before.acls)):
        found.append(f"ACL added: {acl}")
    found += _group_differences(before, after)
    found += _keyed_differences("SCRAM credentials of user", before.scram, after.scram)
    found += _keyed_differences("dynamic configs of broker", before.brokers, after.brokers)
    if before.quotas_read and after.quotas_read:
        found += _keyed_differences("quotas of", before.quotas, after.quotas)
    return found


def _keyed_differences(
    what: str, before: Mapping[str, object], after: Mapping[str, object]
) -> list[str]:
    """``what <key>`` for each key whose value changed, appeared or went."""
    return [
        f"{what} {key}: {before.get(key)}, now {after.get(key)}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def _group_differences(before: Snapshot, after: Snapshot) -> list[str]:
    found: list[str] = []
    for group, offsets in sorted(before.groups.items()):
        now_offsets = after.groups.get(group)
        if now_offsets is None:
            found.append(f"group {group} is gone")
            continue
        consuming = group in before.active or group in after.active
        for tp, offset in sorted(offsets.items()):
            now_offset = now_offsets.get(tp)
            if now_offset is None:
                found.append(f"group {group}: no commit for {tp} any more (was {offset})")
            elif now_offset < offset or (now_offset != offset and not consuming):
                found.append(f"group {group}: {tp} committed {offset}, now {now_offset}")
    return found
