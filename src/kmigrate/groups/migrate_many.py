"""`groups migrate --groups REGEX`: move many stopped groups at once, checked together.

Every group is planned from one look at each cluster (``plan_groups``) and all their
commits go to the target at once (``commit_changes``): the cost is a few round trips
whatever the number of groups. The guards are ``migrate_group``'s, per group, and a
refusal of any group changes nothing for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kmigrate.errors import (
    ClusterUnreachableError,
    ConflictError,
    KMigrateError,
    NotFoundError,
)
from kmigrate.groups.commit import check_kept, commit_changes
from kmigrate.groups.migrate import (
    MigrateResult,
    changes_of,
    check_members,
    check_not_moved_on,
    check_translations,
)
from kmigrate.groups.plan import GroupPlan, plan_groups
from kmigrate.groups.translation import NOT_IN_LINK, waiting_for_mirror
from kmigrate.groups.waiting import WaitProgress, wait_for_mirror
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.store import Store
from kmigrate.store.groups import positions_by_group


@dataclass(frozen=True)
class ManyMoved:
    results: list[MigrateResult]  # the groups with offsets on the link's topics, by id
    left_out: list[str]  # matching groups without any: nothing of theirs to move

    @property
    def applied(self) -> list[str]:
        """Groups committed on the target by this call."""
        return [r.plan.group for r in self.results if r.applied]

    @property
    def changes(self) -> int:
        """Partitions (of all groups) whose target offset differs from the target's commit."""
        return sum(len(r.changes) for r in self.results)


def matching_groups(
    store: Store, link: Link, pattern: re.Pattern[str], source: ClusterAdmin, *, failover: bool
) -> list[str]:
    """The source's groups whose whole id ``pattern`` matches; with ``failover`` and the
    source unreachable, the groups kmigrate has seen on the link."""
    try:
        names: Iterable[str] = [g.group_id for g in source.list_groups()]
    except ClusterUnreachableError:
        if not failover:
            raise
        names = positions_by_group(store, link.name)
    return sorted(n for n in names if pattern.fullmatch(n))


def migrate_groups(
    store: Store,
    link: Link,
    groups: Iterable[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    *,
    apply: bool,
    wait_s: float | None = None,
    failover: bool = False,
    on_wait: WaitProgress | None = None,
) -> ManyMoved:
    """``migrate_group`` for every one of ``groups`` at once; raises, changing nothing,
    if any group with offsets on the link's topics cannot move (the error names the
    first and how many). With ``apply`` all their changes are committed together."""
    plans = plan_groups(store, link, groups, source, target, fall_back=failover)
    moving = [p for p in plans if _concerns_link(p)]
    left_out = [p.group for p in plans if not _concerns_link(p)]
    _refuse_any(moving, check_members)
    if wait_s is not None and any(waiting_for_mirror(p.partitions) for p in moving):
        moving = wait_for_mirror(
            store, link, moving, source, target, wait_s, on_wait, check_members
        )
    _refuse_any(moving, check_translations)
    _refuse_any(moving, check_not_moved_on)
    changes = {p.group: changes_of(p) for p in moving}
    if apply and any(changes.values()):
        failed = commit_changes(store, target, {p.group: p for p in moving}, changes)
        if failed:
            raise _partly_committed(failed, changes)
        check_kept(target, link.target, changes)
    return ManyMoved(
        [MigrateResult(p, changes[p.group], apply and bool(changes[p.group])) for p in moving],
        left_out,
    )


def _concerns_link(plan: GroupPlan) -> bool:
    return any(t.reason != NOT_IN_LINK for t in plan.partitions)


def _refuse_any(plans: list[GroupPlan], check: Callable[[GroupPlan], None]) -> None:
    """Raise the first group's refusal, saying how many groups were refused, if ``check``
    refuses any (one group: its own error, unchanged)."""
    refused: list[KMigrateError] = []
    for plan in plans:
        try:
            check(plan)
        except (ConflictError, NotFoundError) as exc:
            refused.append(exc)
    if not refused:
        return
    first = refused[0]
    if len(plans) == 1:
        raise first
    raise type(first)(
        f"{len(refused)} of {len(plans)} consumer groups cannot move, so none was moved; "
        f"the first: {first.message}"
    )


def _partly_committed(
    failed: dict[str, KMigrateError], changes: dict[str, dict[tuple[str, int], int]]
) -> KMigrateError:
    group, first = sorted(failed.items())[0]
    moving = sum(1 for offsets in changes.values() if offsets)
    return type(first)(
        f"the target refused {len(failed)} of {moving} consumer groups (e.g. {group}: "
        f"{first.message}); the other groups are committed; run again to move the rest"
    )
