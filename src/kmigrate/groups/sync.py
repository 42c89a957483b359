"""`groups sync`: keep groups on the target at the exact translation of their source commits.

While consumers still run on the source, every round commits, per matching group,
the translation of its latest source commit (resets included) to the same group on
the target. A group with members on the target, or one that consumed there since
kmigrate last committed it, is never touched: its consumers own it now. A round
looks at all matching groups at once and commits them together (``plan_groups``,
``commit_changes``): its round trips do not grow with the number of groups.

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
from kmigrate.groups.commit import commit_changes
from kmigrate.groups.migrate import check_not_moved_on
from kmigrate.groups.plan import GroupPlan, plan_groups
from kmigrate.groups.translation import NOT_IN_LINK
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.waiting import WaitAbandoned, WaitPolicy


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
    """One pass over the source's groups that match ``pattern`` and use the link's topics:
    all of them planned from one look at each cluster, then committed at once."""
    names = [g.group_id for g in source.list_groups() if pattern.fullmatch(g.group_id)]
    plans = {p.group: p for p in plan_groups(store, link, names, source, target, fall_back=False)}
    decided = {group: _decide(plan) for group, plan in plans.items()}
    changes = {group: d.changes for group, d in decided.items() if d.changes}
    failed = commit_changes(store, target, plans, changes) if changes else {}
    for error in failed.values():
        if not isinstance(error, GroupActiveError | KafkaOperationError):
            raise error
    results = []
    for group, d in decided.items():
        if d.synced is None:
            continue
        if group in failed:
            # A consumer joined between the look and the commit: the broker refuses.
            results.append(GroupSynced(group, 0, 0, d.synced.pending, failed[group].message))
        else:
            results.append(d.synced)
    return SyncRound(results)


@dataclass(frozen=True)
class _Decision:
    synced: GroupSynced | None  # None: the group has nothing on the link's topics
    changes: dict[tuple[str, int], int] = field(default_factory=dict)


def _decide(plan: GroupPlan) -> _Decision:
    """What this round does with one group: skip it (and why), or commit ``changes``."""
    group = plan.group
    relevant = [t for t in plan.partitions if t.reason != NOT_IN_LINK]
    if not relevant:
        return _Decision(None)
    usable = [t for t in relevant if t.usable]
    pending = len(relevant) - len(usable)
    if plan.target.members:
        why = f"{plan.target.members} active member(s) on the target"
        return _Decision(GroupSynced(group, 0, 0, pending, why))
    try:
        check_not_moved_on(plan)
    except GroupMovedOnError:
        why = "it consumed on the target since the last sync"
        return _Decision(GroupSynced(group, 0, 0, pending, why))
    changes = {
        (t.topic, t.partition): t.target_offset
        for t in usable
        if t.target_offset is not None
        and plan.target.committed.get((t.topic, t.partition)) != t.target_offset
    }
    synced = GroupSynced(group, len(changes), len(usable) - len(changes), pending)
    return _Decision(synced, changes)
