"""`groups migrate`: commit a stopped group's exact translation to the same group on the target.

Everything is checked before anything is written; a refusal changes nothing. Running
it again is harmless: a group already at its translation is left alone, and a group
that consumed on the target since kmigrate committed it is never rewound.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.errors import (
    GroupActiveError,
    GroupMovedOnError,
    GroupNotFoundError,
    NotTranslatableError,
)
from kmigrate.groups.commit import check_kept, commit_changes
from kmigrate.groups.plan import GroupPlan, plan_group
from kmigrate.groups.translation import (
    BELOW_START,
    NOT_IN_LINK,
    NOT_MIRRORED,
    PartitionTranslation,
    waiting_for_mirror,
)
from kmigrate.groups.waiting import WaitProgress, wait_for_mirror
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.store import Store


@dataclass(frozen=True)
class MigrateResult:
    plan: GroupPlan
    changes: dict[tuple[str, int], int]  # target offsets that differ from the target's commits
    applied: bool

    @property
    def outcome(self) -> str:
        """already-done (the target holds the translation), applied, or dry-run."""
        if not self.changes:
            return "already-done"
        return "applied" if self.applied else "dry-run"


def migrate_group(
    store: Store,
    link: Link,
    group: str,
    source: ClusterAdmin,
    target: ClusterAdmin,
    *,
    apply: bool,
    wait_s: float | None = None,
    failover: bool = False,
    on_wait: WaitProgress | None = None,
) -> MigrateResult:
    """Plan (and with ``apply`` commit) the group's move; raises on any refusal.

    ``wait_s``: wait up to that long for the mirror to reach the group's position
    instead of refusing. ``failover``: the source is unreachable and the operator
    accepts the last known commits (each partition says what may repeat).
    """
    plan = plan_group(store, link, group, source, target, fall_back=failover)
    check_members(plan)
    if wait_s is not None and waiting_for_mirror(plan.partitions):
        [plan] = wait_for_mirror(
            store, link, [plan], source, target, wait_s, on_wait, check_members
        )
    check_translations(plan)
    check_not_moved_on(plan)
    changes = changes_of(plan)
    if apply and changes:
        failed = commit_changes(store, target, {group: plan}, {group: changes})
        if group in failed:
            raise failed[group]
        check_kept(target, link.target, {group: changes})
    return MigrateResult(plan, changes, apply and bool(changes))


def changes_of(plan: GroupPlan) -> dict[tuple[str, int], int]:
    """The plan's target offsets that differ from the target's commits."""
    return {
        key: offset
        for key, offset in plan.target_offsets().items()
        if plan.target.committed.get(key) != offset
    }


def check_members(plan: GroupPlan) -> None:
    g, link = plan.group, plan.link
    if plan.source is not None and plan.source.members:
        raise GroupActiveError(
            f"consumer group '{g}' has {plan.source.members} active member(s) on source "
            f"'{link.source}'; stop its consumers there first, then run this again"
        )
    if plan.target.members:
        raise GroupActiveError(
            f"consumer group '{g}' has {plan.target.members} active member(s) on target "
            f"'{link.target}'; kmigrate never moves offsets under running consumers: stop them "
            f"first (or leave the group as it is)"
        )
    if not plan.partitions:
        where = (
            f"on source '{link.source}'"
            if plan.source is not None
            else f"in the store: kmigrate never saw it before source '{link.source}' became "
            f"unreachable ({plan.source_error})"
        )
        raise GroupNotFoundError(f"consumer group '{g}' has no committed offsets {where}")


def check_translations(plan: GroupPlan) -> None:
    """Refuse unless every partition has a target offset the operator can rely on."""
    g, name = plan.group, plan.link.name
    by_reason: dict[str | None, list[PartitionTranslation]] = {}
    for t in plan.partitions:
        if (not t.exact and not plan.failover) or t.target_offset is None:
            by_reason.setdefault(t.reason, []).append(t)
    if not_in_link := by_reason.get(NOT_IN_LINK):
        topics = ", ".join(sorted({t.topic for t in not_in_link}))
        raise NotTranslatableError(
            f"consumer group '{g}' also has offsets for {topics}, which link '{name}' does not "
            f"mirror; widen the link's --topics or delete those offsets on the source first"
        )
    if below := by_reason.get(BELOW_START):
        t = below[0]
        raise NotTranslatableError(
            f"consumer group '{g}' is at offset {t.source_offset} of {t.topic}[{t.partition}], "
            f"before where link '{name}' began mirroring ({t.detail}); start a link from an "
            f"earlier --start, or let the group consume past that point on the source"
        )
    if waiting := by_reason.get(NOT_MIRRORED):
        t = waiting[0]
        raise NotTranslatableError(
            f"the mirror of link '{name}' has not reached consumer group '{g}''s position in "
            f"{len(waiting)} partition(s) (e.g. {t.topic}[{t.partition}]: {t.detail}); "
            f"run again with --wait, or see `kmigrate mirror status --link {name}`"
        )
    if missing := [t for ts in by_reason.values() for t in ts]:
        t = missing[0]
        raise NotTranslatableError(
            f"no target offset for consumer group '{g}' in {t.topic}[{t.partition}]: {t.detail}"
        )


def check_not_moved_on(plan: GroupPlan) -> None:
    """Refuse to rewind a group that consumed on the target after kmigrate committed it."""
    planned_offsets = plan.target_offsets()
    for pos in plan.known:
        if pos.target_offset is None:
            continue
        now = plan.target.committed.get((pos.topic, pos.partition))
        planned = planned_offsets.get((pos.topic, pos.partition))
        if now is not None and now not in (pos.target_offset, planned):
            raise GroupMovedOnError(
                f"consumer group '{plan.group}' has moved on on target '{plan.link.target}' "
                f"since kmigrate committed it ({pos.topic}[{pos.partition}] is at {now}, "
                f"kmigrate set {pos.target_offset}): it already consumes there; nothing changed"
            )
