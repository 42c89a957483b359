"""Which Kafka ACL operations each kmigrate role needs, and what is missing (pure).

A role is what kmigrate does with a cluster: read it as a mirror source, write it as a
mirror target, move consumer groups, reassign partitions, serve as a gateway backend.
Each needs operations on the cluster, on topics and on groups (Kafka's ACL operations:
READ, WRITE, CREATE, DESCRIBE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS, ...).

Kafka itself reports the operations a principal may perform on the cluster, on each
topic and on each group it can see ("authorized operations"); :func:`compare` checks
each role's needs against that report. Topic and group needs are checked on every topic
and group seen; with none seen they are *unchecked* (not failed): a new, empty cluster
has nothing to check them on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Resource = Literal["cluster", "topic", "group"]

ROLES = ("mirror source", "mirror target", "group moves", "reassign", "gateway backend")

# What an operation implies (Kafka's AclAuthorizer/StandardAuthorizer): ALL is every
# operation; reading, writing, deleting or altering lets one describe; altering configs
# lets one describe them.
_IMPLIED: Mapping[str, frozenset[str]] = {
    "READ": frozenset({"DESCRIBE"}),
    "WRITE": frozenset({"DESCRIBE"}),
    "DELETE": frozenset({"DESCRIBE"}),
    "ALTER": frozenset({"DESCRIBE"}),
    "ALTER_CONFIGS": frozenset({"DESCRIBE_CONFIGS"}),
}


@dataclass(frozen=True)
class Need:
    """``role`` needs ``operation`` on ``resource`` (the cluster, or every topic/group
    it works on) for ``why``; ``or_topics``: a cluster operation that the same operation
    on the topics replaces (CREATE granted on the topics' names)."""

    role: str
    resource: Resource
    operation: str
    why: str
    or_topics: bool = False


NEEDS: tuple[Need, ...] = (
    Need("mirror source", "topic", "DESCRIBE", "list and describe the topics"),
    Need("mirror source", "topic", "READ", "read the records"),
    Need("mirror source", "topic", "DESCRIBE_CONFIGS", "copy the topic configs"),
    Need("mirror target", "cluster", "CREATE", "create the topic copies", or_topics=True),
    Need("mirror target", "topic", "DESCRIBE", "describe the copies"),
    Need("mirror target", "topic", "WRITE", "write the records"),
    Need("mirror target", "topic", "ALTER_CONFIGS", "set the copies' configs"),
    Need("group moves", "topic", "READ", "commit offsets for the groups' topics"),
    Need("group moves", "group", "DESCRIBE", "read the groups' committed offsets"),
    Need("group moves", "group", "READ", "commit the translated offsets"),
    Need("reassign", "cluster", "DESCRIBE", "list partition reassignments"),
    Need("reassign", "cluster", "ALTER", "move partition replicas"),
    Need("reassign", "cluster", "DESCRIBE_CONFIGS", "read the brokers' throttles"),
    Need("reassign", "cluster", "ALTER_CONFIGS", "set the brokers' throttle rates"),
    Need("reassign", "topic", "ALTER_CONFIGS", "set the topics' throttled replicas"),
    Need("gateway backend", "topic", "DESCRIBE", "answer clients' metadata requests"),
    Need("gateway backend", "topic", "READ", "serve clients' fetches"),
    Need("gateway backend", "topic", "WRITE", "forward clients' produce requests"),
    Need("gateway backend", "group", "READ", "serve clients' consumer groups"),
)


def effective(operations: Iterable[str]) -> frozenset[str]:
    """The operations ``operations`` grant, implied ones included (upper-case names)."""
    granted = {o.upper() for o in operations}
    if "ALL" in granted:
        return frozenset({n.operation for n in NEEDS} | granted)
    for operation in list(granted):
        granted |= _IMPLIED.get(operation, frozenset())
    return frozenset(granted)


@dataclass(frozen=True)
class Authorized:
    """What Kafka reported the principal may do: on the cluster (None: not reported),
    on each topic and each group it saw."""

    cluster: frozenset[str] | None
    topics: Mapping[str, frozenset[str]] = field(default_factory=dict)
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """One need of one role: ``ok`` True (granted), False (missing) or None (unchecked);
    ``detail`` says where it is missing or why it was not checked."""

    need: Need
    ok: bool | None
    detail: str = ""

    @property
    def line(self) -> str:
        """E.g. "mirror target: cannot CREATE topics (cluster authorization), needed to
        create the topic copies"."""
        need = self.need
        what = {"topic": "topics", "group": "groups"}.get(need.resource)
        what = what or ("topics" if need.or_topics else "the cluster")
        verb = "cannot" if self.ok is False else "did not check"
        return f"{need.role}: {verb} {need.operation} {what} ({self.detail}), needed to {need.why}"


def compare(authorized: Authorized, roles: Iterable[str] = ROLES) -> list[Finding]:
    """Each need of ``roles`` against what Kafka reported, in NEEDS order."""
    wanted = set(roles)
    return [_finding(need, authorized) for need in NEEDS if need.role in wanted]


def _finding(need: Need, authorized: Authorized) -> Finding:
    if need.resource == "cluster":
        return _on_cluster(need, authorized)
    seen = authorized.topics if need.resource == "topic" else authorized.groups
    if not seen:
        return Finding(need, None, f"no {need.resource} visible to check it on")
    lacking = sorted(name for name, ops in seen.items() if need.operation not in effective(ops))
    if not lacking:
        return Finding(need, True, f"all {len(seen)} {need.resource}(s) checked")
    return Finding(need, False, f"{_some(lacking)} of {len(seen)} {need.resource}(s)")


def _on_cluster(need: Need, authorized: Authorized) -> Finding:
    if authorized.cluster is None:
        return Finding(need, None, "the cluster did not report its authorized operations")
    if need.operation in effective(authorized.cluster):
        return Finding(need, True, "cluster authorization")
    topics = authorized.topics
    if need.or_topics and topics and all(need.operation in effective(o) for o in topics.values()):
        return Finding(need, True, f"on all {len(topics)} topic(s) seen")
    return Finding(need, False, "cluster authorization")


def _some(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def missing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are missing an operation (``ok`` False)."""
    return [f for f in findings if f.ok is False]


def role_status(findings: Iterable[Finding], role: str) -> str:
    """ "ok", "missing N" or "unchecked N" for one role's findings."""
    mine = [f for f in findings if f.need.role == role]
    lacking = sum(1 for f in mine if f.ok is False)
    unchecked = sum(1 for f in mine if f.ok is None)
    if lacking:
        return f"missing {lacking}"
    return f"ok ({unchecked} unchecked)" if unchecked else "ok"
