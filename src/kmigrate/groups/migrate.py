"""`groups migrate`: commit a stopped group's exact translation to the same group on the target.

Everything is checked before anything is written; a refusal changes nothing. Running
it again is harmless: a group already at its translation is left alone, and a group
that consumed on the target since kmigrate committed it is never rewound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kmigrate.errors import (
    GroupActiveError,
    GroupMovedOnError,
    GroupNotFoundError,
    KafkaOperationError,
    MirrorError,
    NotTranslatableError,
)
from kmigrate.groups.plan import GroupPlan, plan_group
from kmigrate.groups.translation import (
    BELOW_START,
    NOT_IN_LINK,
    NOT_MIRRORED,
    PartitionTranslation,
    waiting_for_mirror,
)
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.retry import WaitPolicy
from kmigrate.mirror.status import run_state
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.links import Link
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store import Store
from kmigrate.store.groups import positions_of, remember_target
from kmigrate.store.runs import get_run

# (records still to mirror, records to mirror when the wait began)
WaitProgress = Callable[[int, int], None]


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
        plan = _wait_for_mirror(store, link, group, source, target, plan, wait_s, on_wait)
    check_translations(plan)
    check_not_moved_on(store, plan)
    changes = {
        key: offset
        for key, offset in plan.target_offsets().items()
        if plan.target.committed.get(key) != offset
    }
    if apply and changes:
        _commit(store, target, plan, changes)
    return MigrateResult(plan, changes, apply and bool(changes))


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


def check_not_moved_on(store: Store, plan: GroupPlan) -> None:
    """Refuse to rewind a group that consumed on the target after kmigrate committed it."""
    planned_offsets = plan.target_offsets()
    for pos in positions_of(store, plan.link.name, plan.group):
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


def _wait_for_mirror(
    store: Store,
    link: Link,
    group: str,
    source: ClusterAdmin,
    target: ClusterAdmin,
    plan: GroupPlan,
    wait_s: float,
    on_wait: WaitProgress | None,
) -> GroupPlan:
    """Re-plan until the mirror has read past every commit of the (stopped) group.

    A cluster that blinks meanwhile (a broker restart, a coordinator moving) is waited
    out within the same ``wait_s``, as the mirror waits it out."""
    total = _to_go(plan)
    deadline = time.monotonic() + wait_s
    policy = WaitPolicy(
        wait_s,
        roles={link.source: "source", link.target: "target"},
        resume_hint="nothing changed; run again once it is back",
    )
    while waiting_for_mirror(plan.partitions):
        if on_wait is not None:
            on_wait(_to_go(plan), total)
        state, reason = run_state(get_run(store, link.name))
        if state not in LIVE_STATES:
            raise MirrorError(
                f"the mirror of link '{link.name}' is {state}{': ' + reason if reason else ''}; "
                f"start it (`kmigrate mirror start`) so it can reach consumer group '{group}'"
            )
        if time.monotonic() > deadline:
            raise NotTranslatableError(
                f"the mirror of link '{link.name}' did not reach consumer group '{group}''s "
                f"position within {wait_s:.0f}s ({_to_go(plan):,} records to go); nothing changed"
            )
        time.sleep(0.5)
        plan = policy.run(lambda: plan_group(store, link, group, source, target, fall_back=False))
        check_members(plan)
    if on_wait is not None:
        on_wait(0, total)
    return plan


def _to_go(plan: GroupPlan) -> int:
    return sum(t.behind for t in waiting_for_mirror(plan.partitions))


def _commit(
    store: Store, target: ClusterAdmin, plan: GroupPlan, changes: dict[tuple[str, int], int]
) -> None:
    by_key = {(t.topic, t.partition): t for t in plan.partitions}
    target.alter_group_offsets(
        plan.group, [TopicPartitionOffset(t, p, o) for (t, p), o in sorted(changes.items())]
    )
    remember_target(
        store,
        plan.link.name,
        plan.group,
        [(t, p, by_key[(t, p)].source_offset, o) for (t, p), o in changes.items()],
    )
    seen = view_group(target, plan.group).committed
    wrong = [k for k, o in changes.items() if seen.get(k) != o]
    if wrong:
        t, p = wrong[0]
        raise KafkaOperationError(
            f"target '{plan.link.target}' did not keep the commit of consumer group "
            f"'{plan.group}' for {t}[{p}] (it has {seen.get((t, p))}, kmigrate set "
            f"{changes[(t, p)]}); run again"
        )
