"""`groups sync`: keep groups on the target at the exact translation of their source commits.

While consumers still run on the source, every round commits, per matching group,
the translation of its latest source commit (resets included) to the same group on
the target. A group with members on the target, or one that consumed there since
kmigrate last committed it, is never touched: its consumers own it now.

``follow`` runs the rounds until stopped; a source or target that stops answering
(a coordinator restarting or moving) is waited out under the shared WaitPolicy, and
the interrupted round runs again: a commit is the translation of the latest source
commit, so running a round twice commits the same offsets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from kmigrate.errors import GroupActiveError, GroupMovedOnError, KafkaOperationError
from kmigrate.groups.migrate import check_not_moved_on
from kmigrate.groups.plan import plan_group
from kmigrate.groups.translation import NOT_IN_LINK
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.retry import WaitAbandoned, WaitPolicy
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.store.groups import remember_target


@dataclass(frozen=True)
class GroupSynced:
    group: str
    updated: int  # partitions committed on the target this round
    in_step: int  # partitions already at their translation
    pending: int  # partitions the mirror has not reached yet (or not translatable)
    skipped: str | None = None  # why the group was left alone this round


@dataclass(frozen=True)
class SyncRound:
    groups: list[GroupSynced] = field(default_factory=list)


def follow(
    store: Store,
    link: Link,
    pattern: re.Pattern[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    policy: WaitPolicy,
    on_round: Callable[[SyncRound], None],
    interval_s: float,
    *,
    once: bool = False,
) -> None:
    """Sync rounds every ``interval_s`` until ``policy.pause`` says stop (or once);
    outages are waited out by ``policy``."""
    while True:
        try:
            round_ = policy.run(lambda: sync_round(store, link, pattern, source, target))
        except WaitAbandoned:
            return
        on_round(round_)
        if once or not policy.pause(interval_s):
            return


def sync_round(
    store: Store, link: Link, pattern: re.Pattern[str], source: ClusterAdmin, target: ClusterAdmin
) -> SyncRound:
    """One pass over the source's groups that match ``pattern`` and use the link's topics."""
    names = [g.group_id for g in source.list_groups() if pattern.fullmatch(g.group_id)]
    results = [sync_group(store, link, name, source, target) for name in names]
    return SyncRound([r for r in results if r is not None])


def sync_group(
    store: Store, link: Link, group: str, source: ClusterAdmin, target: ClusterAdmin
) -> GroupSynced | None:
    """Bring one group on the target to its translation; None if it has nothing to sync."""
    plan = plan_group(store, link, group, source, target, fall_back=False)
    relevant = [t for t in plan.partitions if t.reason != NOT_IN_LINK]
    if not relevant:
        return None
    usable = [t for t in relevant if t.usable]
    pending = len(relevant) - len(usable)
    if plan.target.members:
        return GroupSynced(
            group, 0, 0, pending, f"{plan.target.members} active member(s) on the target"
        )
    try:
        check_not_moved_on(store, plan)
    except GroupMovedOnError:
        return GroupSynced(group, 0, 0, pending, "it consumed on the target since the last sync")
    changes = [
        t for t in usable if plan.target.committed.get((t.topic, t.partition)) != t.target_offset
    ]
    if changes:
        try:
            target.alter_group_offsets(
                group,
                [TopicPartitionOffset(t.topic, t.partition, t.target_offset or 0) for t in changes],
            )
        except (GroupActiveError, KafkaOperationError) as exc:
            # A consumer joined between the look and the commit: the broker refuses.
            return GroupSynced(group, 0, 0, pending, exc.message)
        remember_target(
            store,
            link.name,
            group,
            [(t.topic, t.partition, t.source_offset, t.target_offset or 0) for t in changes],
        )
    return GroupSynced(group, len(changes), len(usable) - len(changes), pending)
