"""`migrate consumers --groups REGEX`: move stopped consumer groups to the target, exactly.

Consumers first: every topic the group reads is IN_SYNC; the group's consumers are
stopped on the source; schemas registered on the source since `migrate start` are copied
to the target's registry (when the plan copies schemas); its commits are translated
through the offset map (waiting for the mirror to reach them) and committed on the
target. Producers first: the topics are promoted and the group has consumed everything
the source holds.
"""

from __future__ import annotations

from kmigrate.errors import GroupActiveError, GroupMovedOnError
from kmigrate.groups.migrate import migrate_group
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration import via_gateway
from kmigrate.migration.identity import copy_schemas, schema_problems
from kmigrate.migration.observe import Snapshot, observe
from kmigrate.migration.session import Migration, Report, Step
from kmigrate.model.links import Link
from kmigrate.model.migrations import GroupPhase, SwitchOrder, TopicPhase, after_groups_moved
from kmigrate.store.groups import positions_of
from kmigrate.store.links import require_link
from kmigrate.store.migrations import set_state

WAIT_FOR_MIRROR_S = 300.0


def move_consumers(
    m: Migration,
    groups: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
    *,
    wait_s: float | None = WAIT_FOR_MIRROR_S,
) -> dict[str, str]:
    """Move ``groups``; returns each group's outcome (moved / already-moved)."""
    step = Step(m, "consumers", "group", groups, report)
    snap = observe(m, source, target)
    todo = _guard(step, snap, groups)
    outcomes = {g: "already-moved" for g in groups if g not in todo}
    if m.plan.via_gateway:
        return _onto_gateway(m, step, todo, outcomes, source, target)
    link = require_link(m.store, m.name)
    # Dry runs first: members, translations and the wait for the mirror change nothing.
    for group in todo:
        if group in step.resuming and _landed(m, group, target):
            continue
        try:
            migrate_group(m.store, link, group, source, target, apply=False, wait_s=wait_s)
        except (GroupActiveError, GroupMovedOnError) as exc:
            step.refuse(exc.message, type(exc))
    if not todo:
        return outcomes
    conflicts = schema_problems(m.plan, source.cluster, target.cluster)
    if conflicts:
        step.refuse(f"{conflicts[0]}; the groups' consumers could not read every record there")
    with step.acting():
        # Schemas the source's producers registered since `migrate start`: their records
        # are mirrored, and the consumers about to read them on the target need the ids.
        added = copy_schemas(m.plan, source.cluster, target.cluster, report)
        if added:
            step.report(f"registered {added} schema version(s) added on the source since start")
        for group in todo:
            outcomes[group] = _move(m, link, group, source, target, step, wait_s)
            set_state(m.store, m.name, "group", group, GroupPhase.MOVED.value)
        advance_topics(m)
    return outcomes


def _onto_gateway(
    m: Migration,
    step: Step,
    todo: list[str],
    outcomes: dict[str, str],
    source: ClusterAdmin,
    target: ClusterAdmin,
) -> dict[str, str]:
    """A --via-gateway migration: the groups' commits go to the gateway's group home as
    they are (the gateway serves the source's offsets until promote)."""
    topics = {g: list(planned.topics) if (planned := m.plan.group(g)) else [] for g in todo}
    resumed = {g for g in todo if g in step.resuming and view_group(target, g).members > 0}
    for group in todo:
        if group in resumed:
            continue  # copied before a crash; its consumers already run on the gateway
        try:
            via_gateway.onto_gateway(group, topics[group], source, target, apply=False)
        except GroupActiveError as exc:
            step.refuse(exc.message, type(exc))
    if not todo:
        return outcomes
    with step.acting():
        for group in todo:
            if group not in resumed:
                n = via_gateway.onto_gateway(group, topics[group], source, target, apply=True)
                step.report(
                    f"group {group}: {n} commit(s) copied to the gateway's group home "
                    f"'{m.plan.target}'; start its consumers on the gateway"
                )
            outcomes[group] = "moved"
            set_state(m.store, m.name, "group", group, GroupPhase.MOVED.value)
        advance_topics(m)
    return outcomes


def _guard(step: Step, snap: Snapshot, groups: list[str]) -> list[str]:
    m = step.m
    moves = {g.name: g for g in snap.groups}
    todo = []
    for name in groups:
        move = moves[name]
        if move.phase is GroupPhase.MOVED and move.pending is None:
            continue
        for topic in move.topics:
            _check_topic(step, snap, name, topic)
        if snap.order is SwitchOrder.PRODUCERS_FIRST and move.source_lag > 0:
            step.refuse(
                f"group {name} still has {move.source_lag:,} record(s) to consume on source "
                f"'{m.plan.source}'; let its consumers finish there, stop them, then move it"
            )
        todo.append(name)
    return todo


def _check_topic(step: Step, snap: Snapshot, group: str, topic: str) -> None:
    view = snap.topic(topic)
    if snap.order is SwitchOrder.CONSUMERS_FIRST:
        if view.phase in (TopicPhase.IN_SYNC, TopicPhase.CONSUMERS_MOVED):
            return
        if view.phase is TopicPhase.MIRRORING:
            step.refuse(
                f"topic {topic} (read by group {group}) is not in sync yet: lag "
                f"{_n(view.lag)}, in sync at <= {step.m.plan.in_sync_lag:,}; wait, then retry"
            )
    elif view.phase in (TopicPhase.PROMOTED, TopicPhase.CONSUMERS_MOVED):
        return
    need = "IN_SYNC" if snap.order is SwitchOrder.CONSUMERS_FIRST else "PROMOTED"
    step.refuse(
        f"topic {topic} (read by group {group}) is {view.phase.value}; moving its consumers "
        f"needs it {need} ({snap.order.value})"
    )


def _landed(m: Migration, group: str, target: ClusterAdmin) -> bool:
    """An interrupted move whose commit reached the target and whose consumers run there."""
    committed = any(p.target_offset is not None for p in positions_of(m.store, m.name, group))
    return committed and view_group(target, group).members > 0


def _move(
    m: Migration,
    link: Link,
    group: str,
    source: ClusterAdmin,
    target: ClusterAdmin,
    step: Step,
    wait_s: float | None,
) -> str:
    if group in step.resuming and _landed(m, group, target):
        return "moved"
    try:
        result = migrate_group(m.store, link, group, source, target, apply=True, wait_s=wait_s)
    except GroupMovedOnError:
        if group in step.resuming:
            return "moved"  # committed before the crash; consumers already moved on there
        raise
    step.report(
        f"group {group}: {result.outcome}, "
        f"{len(result.plan.partitions)} partition(s) translated exactly"
    )
    return "moved" if result.outcome in ("applied", "already-done") else result.outcome


def advance_topics(m: Migration) -> None:
    """Topics whose every reading group has moved take their next phase."""
    groups = m.groups()
    for name, item in m.topics().items():
        readers = m.plan.groups_of(name)
        if not readers or any(groups[g].group_phase is not GroupPhase.MOVED for g in readers):
            continue
        nxt = after_groups_moved(item.topic_phase, m.plan.switch_order)
        if nxt is not None:
            set_state(m.store, m.name, "topic", name, nxt.value, only_from=item.state)


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
