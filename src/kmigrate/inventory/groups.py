"""A cluster's consumer groups with their state and lag, and one group in full."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import GroupInfo


@dataclass(frozen=True)
class GroupRow:
    group: str
    state: str
    members: int
    partitions: int  # with a committed offset
    lag: int


def group_rows(admin: ClusterAdmin, pattern: re.Pattern[str] | None = None) -> list[GroupRow]:
    """The groups (whose whole id ``pattern`` matches). An unreachable cluster is a
    ClusterError, never an empty list."""
    admin.cluster_metadata()
    ids = [g.group_id for g in admin.list_groups()]
    described = [admin.describe_group(i) for i in ids if not pattern or pattern.fullmatch(i)]
    return [
        GroupRow(g.group_id, g.state, len(g.members), len(g.offsets), g.total_lag)
        for g in described
    ]


def group_detail(admin: ClusterAdmin, group_id: str) -> GroupInfo:
    """Members, committed offsets and lag. An unreachable cluster is a ClusterError,
    not "no such group"."""
    admin.cluster_metadata()
    return admin.describe_group(group_id)
