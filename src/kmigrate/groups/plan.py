"""A group's translation plan: both sides of the group and every partition's target offset."""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.errors import ClusterUnreachableError
from kmigrate.groups.translation import (
    PartitionTranslation,
    translate_commits,
    translate_last_known,
)
from kmigrate.groups.view import GroupView, view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.store.groups import positions_of, remember_source
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
    link_topics = {t.topic for t in link_topics_of(store, link.name)}
    target_view = view_group(target, group)
    try:
        source_view = view_group(source, group)
    except ClusterUnreachableError as exc:
        if not fall_back:
            raise
        maps = {(s.topic, s.partition): s for s in load_partitions(store, link.name)}
        positions = positions_of(store, link.name, group)
        translations = translate_last_known(positions, maps, link_topics)
        return GroupPlan(link, group, None, target_view, translations, exc.message)
    commits = [(t, p, o) for (t, p), o in source_view.committed.items()]
    remember_source(store, link.name, group, commits)
    # The map is read after the commits: it only grows, so nothing is judged too early.
    maps = {(s.topic, s.partition): s for s in load_partitions(store, link.name)}
    return GroupPlan(
        link, group, source_view, target_view, translate_commits(commits, maps, link_topics)
    )
