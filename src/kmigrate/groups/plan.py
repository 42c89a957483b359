"""A group's translation plan: both sides of the group and every partition's target offset
(for one group, or for many at the cost of one)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kmigrate.errors import ClusterUnreachableError
from kmigrate.groups.translation import (
    PartitionTranslation,
    translate_commits,
    translate_last_known,
)
from kmigrate.groups.view import GroupView, view_groups
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.groups import GroupPosition
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.store.groups import positions_by_group, remember_sources
from kmigrate.store.links import link_topics_of
from kmigrate.store.offsets import load_partitions


@dataclass(frozen=True)
class GroupPlan:
    link: Link
    group: str
    source: GroupView | None  # None when the source could not be reached
    target: GroupView
    partitions: list[PartitionTranslation]
    source_error: str | None = None
    # What kmigrate remembered of the group before this plan (its last target commits).
    known: tuple[GroupPosition, ...] = ()

    @property
    def failover(self) -> bool:
        return self.source is None

    def target_offsets(self) -> dict[tuple[str, int], int]:
        return {
            (t.topic, t.partition): t.target_offset
            for t in self.partitions
            if t.target_offset is not None
        }


def plan_group(
    store: Store,
    link: Link,
    group: str,
    source: ClusterAdmin,
    target: ClusterAdmin,
    *,
    fall_back: bool,
) -> GroupPlan:
    """Translate ``group``'s source commits through ``link``'s map.

    With ``fall_back`` an unreachable source is not an error: the plan translates the
    last commits kmigrate saw (failover), each labelled with what may repeat.
    """
    return plan_groups(store, link, [group], source, target, fall_back=fall_back)[0]


def plan_groups(
    store: Store,
    link: Link,
    groups: Iterable[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    *,
    fall_back: bool,
) -> list[GroupPlan]:
    """``plan_group`` for each of ``groups`` (sorted by id), whatever their number in a
    few round trips: each cluster is asked once for all of them, the store read twice
    and written in one transaction."""
    names = sorted(set(groups))
    link_topics = {t.topic for t in link_topics_of(store, link.name)}
    targets = view_groups(target, names)
    known = positions_by_group(store, link.name, names)
    try:
        sources = view_groups(source, names)
    except ClusterUnreachableError as exc:
        if not fall_back:
            raise
        maps = {(s.topic, s.partition): s for s in load_partitions(store, link.name)}
        return [
            GroupPlan(
                link,
                g,
                None,
                targets[g],
                translate_last_known(known.get(g, []), maps, link_topics),
                exc.message,
                tuple(known.get(g, [])),
            )
            for g in names
        ]
    commits = {g: [(t, p, o) for (t, p), o in sources[g].committed.items()] for g in names}
    remember_sources(store, link.name, commits)
    # The map is read after the commits: it only grows, so nothing is judged too early.
    maps = {(s.topic, s.partition): s for s in load_partitions(store, link.name)}
    return [
        GroupPlan(
            link,
            g,
            sources[g],
            targets[g],
            translate_commits(commits[g], maps, link_topics),
            known=tuple(known.get(g, [])),
        )
        for g in names
    ]
