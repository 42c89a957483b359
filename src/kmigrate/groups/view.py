"""A consumer group as one cluster sees it: state, active members, committed offsets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kmigrate.errors import GroupNotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import GroupInfo

ABSENT = "absent"
_IDLE_STATES = {"EMPTY", "DEAD", "UNKNOWN", ABSENT}


@dataclass(frozen=True)
class GroupView:
    cluster: str
    state: str  # Kafka's group state, or "absent" when the cluster has no such group
    members: int  # active members (0 for an empty group)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    # The log end of each committed partition when the group was described.
    ends: dict[tuple[str, int], int] = field(default_factory=dict)

    def lag(self, topics: tuple[str, ...] | list[str]) -> int:
        """Records of ``topics`` the group has not consumed yet."""
        return sum(
            max(self.ends[tp] - offset, 0)
            for tp, offset in self.committed.items()
            if tp[0] in topics and tp in self.ends
        )


def view_group(admin: ClusterAdmin, group: str) -> GroupView:
    """The group with the log end of each committed partition (for its lag)."""
    try:
        info = admin.describe_group(group)
    except GroupNotFoundError:
        return GroupView(admin.cluster.name, ABSENT, 0)
    return _view(admin.cluster.name, info)


def view_groups(admin: ClusterAdmin, groups: Iterable[str]) -> dict[str, GroupView]:
    """Each of ``groups`` as ``admin``'s cluster sees it, asked for all at once (no log
    ends: lag is not needed to move a group)."""
    names = sorted(set(groups))
    infos = admin.describe_groups(names)
    return {name: _view(admin.cluster.name, infos.get(name)) for name in names}


def _view(cluster: str, info: GroupInfo | None) -> GroupView:
    if info is None:
        return GroupView(cluster, ABSENT, 0)
    members = 0 if info.state in _IDLE_STATES else len(info.members)
    committed = {(o.topic, o.partition): o.committed for o in info.offsets}
    ends = {(o.topic, o.partition): o.log_end for o in info.offsets if o.log_end is not None}
    return GroupView(cluster, info.state, members, committed, ends)
