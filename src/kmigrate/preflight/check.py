"""Asking one cluster what the preflight needs to know (the I/O half of the preflight):
whether it answers and accepts kmigrate's credentials, its metadata mode and Kafka
version (from a broker's configuration), and the operations Kafka reports the principal
may perform on the cluster and on the topics and groups it can see. Only describes:
nothing is created, validated or changed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kmigrate.authz.ask import principal_of
from kmigrate.config import ClusterConfig
from kmigrate.errors import AuthenticationError, AuthorizationError, ClusterError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import ClusterInfo
from kmigrate.preflight.needs import Authorized, Finding, compare, missing
from kmigrate.preflight.platform import UNKNOWN, kafka_version, metadata_mode


@dataclass(frozen=True)
class ClusterReport:
    """What the preflight found on one cluster. ``failure``: why it could not be checked
    (unreachable, credentials refused); then nothing else is known."""

    name: str
    bootstrap_servers: str
    principal: str
    failure: str | None = None
    authenticated: bool | None = None  # None: not known (the cluster did not answer)
    cluster_id: str | None = None
    brokers: int = 0
    mode: str = "unknown"
    version: str = "unknown"
    topics_seen: int = 0
    groups_seen: int = 0
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def missing(self) -> list[Finding]:
        return missing(self.findings)

    @property
    def ok(self) -> bool:
        return self.failure is None and not self.missing


def check_cluster(
    admin: ClusterAdmin, topics: str | None = None, groups: str | None = None
) -> ClusterReport:
    """The preflight of the cluster ``admin`` reaches; ``topics``/``groups``: regexes
    (whole names) narrowing the topics and groups checked (default: all it can see)."""
    cluster = admin.cluster
    try:
        info, cluster_ops = admin.cluster_operations()
        mode, version = _platform(admin, info)
        topic_names = _matching((t.name for t in admin.list_topics()), topics)
        group_names = _matching((g.group_id for g in admin.list_groups()), groups)
        authorized = Authorized(
            cluster_ops, admin.topic_operations(topic_names), admin.group_operations(group_names)
        )
    except AuthenticationError as exc:
        return _failed(cluster, str(exc))
    except ClusterError as exc:
        return _failed(cluster, str(exc), authenticated=None)
    return ClusterReport(
        name=cluster.name,
        bootstrap_servers=cluster.bootstrap_servers,
        principal=principal_of(cluster),
        authenticated=True,
        cluster_id=info.cluster_id,
        brokers=len(info.brokers),
        mode=mode,
        version=version,
        topics_seen=len(authorized.topics),
        groups_seen=len(authorized.groups),
        findings=tuple(compare(authorized)),
    )


def _platform(admin: ClusterAdmin, info: ClusterInfo) -> tuple[str, str]:
    """Metadata mode and Kafka version from the first broker's settings (reading them
    needs DESCRIBE_CONFIGS on the cluster: without it, both are unknown, and said why)."""
    if not info.brokers:
        return UNKNOWN, UNKNOWN
    try:
        facts = admin.broker_facts(info.brokers[0].node_id)
    except AuthorizationError:
        why = f"{UNKNOWN} (DESCRIBE_CONFIGS on the cluster denied)"
        return why, why
    return metadata_mode(facts), kafka_version(facts)


def _failed(cluster: ClusterConfig, why: str, authenticated: bool | None = False) -> ClusterReport:
    return ClusterReport(
        cluster.name, cluster.bootstrap_servers, principal_of(cluster), why, authenticated
    )


def _matching(names: Iterable[str], regex: str | None) -> list[str]:
    pattern = re.compile(regex) if regex is not None else None
    return sorted(
        n for n in names if not n.startswith("__") and (pattern is None or pattern.fullmatch(n))
    )
