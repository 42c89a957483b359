"""Moving a stopped group back from the target to the source (a rollback before promote).

The reverse of `groups migrate`: each target commit goes back through the offset map
to the source position of the same record, so the consumers continue on the source
without repeating what they consumed on the target and without skipping anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.errors import GroupActiveError, KafkaOperationError, NotTranslatableError
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.store.groups import forget_group
from kmigrate.store.offsets import load_partitions


@dataclass(frozen=True)
class BackMove:
    group: str
    offsets: dict[tuple[str, int], int]  # (topic, partition) -> source offset to commit


def plan_move_back(
    store: Store,
    link: Link,
    group: str,
    topics: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
) -> BackMove:
    """The source offsets for ``group``'s target commits on ``topics``; raises when its
    consumers still run (on either side) or a commit has no exact source position."""
    for admin, side in ((target, "target"), (source, "source")):
        members = view_group(admin, group).members
        if members:
            raise GroupActiveError(
                f"consumer group '{group}' has {members} active member(s) on {side} "
                f"'{admin.cluster.name}'; stop them first, then run this again"
            )
    states = {(s.topic, s.partition): s for s in load_partitions(store, link.name)}
    offsets = {}
    for (topic, partition), committed in sorted(view_group(target, group).committed.items()):
        if topic not in topics:
            continue
        state = states.get((topic, partition))
        back = state.map.source_position(committed, state.target_start) if state else None
        if back is None:
            raise NotTranslatableError(
                f"consumer group '{group}' is at target offset {committed} of "
                f"{topic}[{partition}], which is not a record link '{link.name}' mirrored; "
                "it cannot move back to the source exactly"
            )
        offsets[(topic, partition)] = back
    return BackMove(group, offsets)


def commit_back(store: Store, link: Link, source: ClusterAdmin, move: BackMove) -> None:
    """Commit the group's source offsets and check the source kept them."""
    source.alter_group_offsets(
        move.group, [TopicPartitionOffset(t, p, o) for (t, p), o in sorted(move.offsets.items())]
    )
    seen = view_group(source, move.group).committed
    wrong = [k for k, o in move.offsets.items() if seen.get(k) != o]
    if wrong:
        t, p = wrong[0]
        raise KafkaOperationError(
            f"source '{link.source}' did not keep the commit of consumer group "
            f"'{move.group}' for {t}[{p}]; run again"
        )
    forget_group(store, link.name, move.group)
