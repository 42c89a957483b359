"""Committing planned translations on the target, for any number of groups at once.

The target is asked in two round trips whatever the number of groups (the admin
layer's ``alter_groups_offsets``), what it committed is remembered in one store
transaction, and reading it back for the check costs one more round of requests.
"""

from __future__ import annotations

from collections.abc import Mapping

from kmigrate.errors import KafkaOperationError, KMigrateError
from kmigrate.groups.plan import GroupPlan
from kmigrate.groups.view import view_groups
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.store import Store
from kmigrate.store.groups import remember_targets

# Per group, the target offset of each partition to commit.
Changes = Mapping[str, Mapping[tuple[str, int], int]]


def commit_changes(
    store: Store, target: ClusterAdmin, plans: Mapping[str, GroupPlan], changes: Changes
) -> dict[str, KMigrateError]:
    """Commit each group's ``changes`` on the target and remember them with the source
    offsets they translate (``plans``). Returns the groups the target refused, with why:
    those are neither committed nor remembered; every other group is both."""
    todo = {group: dict(offsets) for group, offsets in changes.items() if offsets}
    failed = target.alter_groups_offsets(
        {
            group: [TopicPartitionOffset(t, p, o) for (t, p), o in sorted(offsets.items())]
            for group, offsets in todo.items()
        }
    )
    done = {group: offsets for group, offsets in todo.items() if group not in failed}
    if done:
        link = plans[next(iter(done))].link.name
        remember_targets(
            store,
            link,
            {group: _remembered(plans[group], offsets) for group, offsets in done.items()},
        )
    return failed


def check_kept(target: ClusterAdmin, target_name: str, changes: Changes) -> None:
    """Raise unless the target holds every commit of ``changes`` (read back at once)."""
    seen = view_groups(target, [g for g, offsets in changes.items() if offsets])
    for group, offsets in sorted(changes.items()):
        wrong = [k for k, o in sorted(offsets.items()) if seen[group].committed.get(k) != o]
        if wrong:
            t, p = wrong[0]
            raise KafkaOperationError(
                f"target '{target_name}' did not keep the commit of consumer group "
                f"'{group}' for {t}[{p}] (it has {seen[group].committed.get((t, p))}, "
                f"kmigrate set {offsets[(t, p)]}); run again"
            )


def _remembered(
    plan: GroupPlan, offsets: Mapping[tuple[str, int], int]
) -> list[tuple[str, int, int, int]]:
    by_key = {(t.topic, t.partition): t for t in plan.partitions}
    return [(t, p, by_key[(t, p)].source_offset, o) for (t, p), o in sorted(offsets.items())]
