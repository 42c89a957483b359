"""`migrate rollback TOPIC...` (before promote): back to PLANNED, to start again later.

The seed's fallback: stop mirroring the topics, delete their target copies, forget
their offset maps; the mirror goes on for the migration's other topics. `migrate
start` copies them again from the beginning.
"""

from __future__ import annotations

import time

from kmigrate.errors import KafkaOperationError, NotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.mirroring import ensure_mirror, mirrored_topics, stop_if_running
from kmigrate.migration.model import MIRRORED, TopicPhase
from kmigrate.migration.session import Migration, Report, Step
from kmigrate.store.migrations import set_state
from kmigrate.store.offsets import forget_topic

DELETE_TIMEOUT_S = 60.0


def rollback_topics(
    m: Migration, topics: list[str], target: ClusterAdmin, report: Report
) -> list[str]:
    step = Step(m, "rollback", "topic", topics, report)
    items = m.topics()
    todo = []
    for name in topics:
        item = items.get(name)
        if item is None:
            step.refuse(f"topic {name} is not in migration '{m.name}'", NotFoundError)
        phase = item.topic_phase
        if phase is TopicPhase.PLANNED and item.pending is None:
            continue
        moved = [g for g in m.plan.groups_of(name) if m.groups()[g].state == "MOVED"]
        if name not in step.resuming and (phase not in MIRRORED or moved):
            step.refuse(_refusal(m, name, phase, moved))
        todo.append(name)
    if not todo:
        return []
    with step.acting():
        stop_if_running(m, report)
        present = {t.name for t in target.describe_topics_if_present(todo)}
        if present:
            report(f"deleting {', '.join(sorted(present))} on target '{m.plan.target}'")
            target.delete_topics(sorted(present))
            _wait_gone(target, present)
        for name in todo:
            forget_topic(m.store, m.name, name)
            set_state(m.store, m.name, "topic", name, TopicPhase.PLANNED.value)
        rest = mirrored_topics(m)
        ensure_mirror(m, rest, report)
    return todo


def _refusal(m: Migration, name: str, phase: TopicPhase, moved: list[str]) -> str:
    if phase is TopicPhase.PLANNED:
        return f"topic {name} is PLANNED: nothing to roll back"
    if phase in MIRRORED or phase is TopicPhase.CONSUMERS_MOVED:
        return (
            f"topic {name}: group(s) {', '.join(moved)} already consume it on target "
            f"'{m.plan.target}'; "
            "a rollback would take their records away. Stop them and move them back first"
        )
    return (
        f"topic {name} is {phase.value}: producers may already write to the target copy, "
        "so it cannot be rolled back"
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
