"""`migrate rollback --topics REGEX` (before promote): back to PLANNED, to start again later.

The seed's fallback: stop mirroring the topics, move any consumer group that already
moved to the target back to the source (its target commits translated back through
the offset map, so nothing repeats or is skipped), delete the target copies and forget
their offset maps; the mirror goes on for the migration's other topics, and `migrate
start` copies the rolled-back topics again from the beginning.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kmigrate.errors import (
    GroupActiveError,
    KafkaOperationError,
    NotTranslatableError,
)
from kmigrate.groups.move_back import commit_back, plan_move_back
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.mirroring import ensure_mirror, mirrored_topics, stop_if_running
from kmigrate.migration.session import Migration, Report, Step
from kmigrate.model.migrations import MIRROR_NEEDED, GroupPhase, TopicPhase
from kmigrate.store.links import require_link
from kmigrate.store.migrations import set_state
from kmigrate.store.offsets import forget_topic

DELETE_TIMEOUT_S = 60.0


Go = Callable[[list[str], list[str]], bool]


def rollback_topics(
    m: Migration,
    topics: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
    go: Go = lambda _topics, _groups: True,
) -> list[str]:
    """Roll ``topics`` back; ``go`` is shown the topics and the groups that would move
    back once every guard passed, and may stop it there (nothing changed)."""
    step = Step(m, "rollback", "topic", topics, report)
    if m.plan.via_gateway:
        step.refuse(
            "rollback of a --via-gateway migration is not supported: its target copies hold "
            "the gateway's committed offsets; stop the mirror (kmigrate mirror stop) and keep "
            "the topics routed to the source instead"
        )
    items = m.topics()
    todo = []
    for name in topics:
        item = items[name]
        phase = item.topic_phase
        if phase is TopicPhase.PLANNED and item.pending is None:
            continue
        if name not in step.resuming and phase not in MIRROR_NEEDED:
            step.refuse(_refusal(name, phase))
        todo.append(name)
    if not todo:
        return []
    groups = _moved_groups(m, todo)
    _guard_groups(step, m, groups, source, target)
    if not go(todo, groups):
        return []
    with step.acting():
        stop_if_running(m, report)
        _move_back(m, groups, todo, source, target, report)
        present = {t.name for t in target.describe_topics_if_present(todo)}
        if present:
            report(f"deleting {', '.join(sorted(present))} on target '{m.plan.target}'")
            target.delete_topics(sorted(present))
            _wait_gone(target, present)
        for name in todo:
            forget_topic(m.store, m.name, name)
            set_state(m.store, m.name, "topic", name, TopicPhase.PLANNED.value)
        ensure_mirror(m, mirrored_topics(m), report)
    return todo


def _refusal(name: str, phase: TopicPhase) -> str:
    if phase is TopicPhase.PLANNED:
        return f"topic {name} is PLANNED: nothing to roll back"
    return (
        f"topic {name} is {phase.value}: producers may already write to the target copy, "
        "so it cannot be rolled back"
    )


def _moved_groups(m: Migration, topics: list[str]) -> list[str]:
    """Groups reading ``topics`` that consume on the target now."""
    groups = m.groups()
    readers = {g for t in topics for g in m.plan.groups_of(t)}
    return sorted(g for g in readers if groups[g].group_phase is GroupPhase.MOVED)


def _guard_groups(
    step: Step, m: Migration, groups: list[str], source: ClusterAdmin, target: ClusterAdmin
) -> None:
    """Moved groups can go back only while all their topics are still mirrored and their
    consumers are stopped on both sides, with exact source positions for their commits."""
    items = m.topics()
    link = require_link(m.store, m.name)
    for group in groups:
        planned = m.plan.group(group)
        assert planned is not None
        promoted = [t for t in planned.topics if items[t].topic_phase not in MIRROR_NEEDED]
        if promoted:
            step.refuse(
                f"group {group} also reads {', '.join(promoted)}, already promoted: it "
                "cannot move back to the source; roll back before promote only"
            )
        try:
            plan_move_back(m.store, link, group, planned.topics, source, target)
        except (GroupActiveError, NotTranslatableError) as exc:
            step.refuse(exc.message, type(exc))


def _move_back(
    m: Migration,
    groups: list[str],
    rolled_back: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
) -> None:
    link = require_link(m.store, m.name)
    for group in groups:
        if m.groups()[group].group_phase is GroupPhase.ON_SOURCE:
            continue  # moved back before an interruption
        planned = m.plan.group(group)
        assert planned is not None
        move = plan_move_back(m.store, link, group, planned.topics, source, target)
        commit_back(m.store, link, source, move)
        set_state(m.store, m.name, "group", group, GroupPhase.ON_SOURCE.value)
        for topic in planned.topics:
            if topic not in rolled_back:
                set_state(
                    m.store,
                    m.name,
                    "topic",
                    topic,
                    TopicPhase.IN_SYNC.value,
                    only_from=TopicPhase.CONSUMERS_MOVED.value,
                )
        report(
            f"group {group}: back on source '{m.plan.source}' at its exact positions "
            f"({len(move.offsets)} partition(s)); start its consumers there"
        )


def _wait_gone(target: ClusterAdmin, names: set[str]) -> None:
    deadline = time.monotonic() + DELETE_TIMEOUT_S
    while target.describe_topics_if_present(sorted(names)):
        if time.monotonic() > deadline:
            raise KafkaOperationError(
                f"target still lists {', '.join(sorted(names))} {DELETE_TIMEOUT_S:.0f}s after "
                "deleting them; run the rollback again"
            )
        time.sleep(0.5)
