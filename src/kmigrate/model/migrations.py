"""The states a migration's topics and groups go through, and the order they may take.

Consumers first (the default): PLANNED -> MIRRORING -> IN_SYNC -> CONSUMERS_MOVED ->
PROMOTED -> DONE. Producers first: ... IN_SYNC -> PROMOTED -> CONSUMERS_MOVED -> DONE
(consumers drain the source, then move). Pure data and pure rules; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class SwitchOrder(Enum):
    CONSUMERS_FIRST = "consumers-first"
    PRODUCERS_FIRST = "producers-first"


class TopicPhase(Enum):
    PLANNED = "PLANNED"
    MIRRORING = "MIRRORING"
    IN_SYNC = "IN_SYNC"
    CONSUMERS_MOVED = "CONSUMERS_MOVED"
    PROMOTED = "PROMOTED"
    DONE = "DONE"


class GroupPhase(Enum):
    ON_SOURCE = "ON_SOURCE"
    MOVED = "MOVED"


# Before promote the target topic is the mirror's alone: these may be rolled back.
MIRRORED = (TopicPhase.MIRRORING, TopicPhase.IN_SYNC)
# Until promote the mirror keeps copying a topic, consumers moved or not.
MIRROR_NEEDED = (TopicPhase.MIRRORING, TopicPhase.IN_SYNC, TopicPhase.CONSUMERS_MOVED)


@dataclass(frozen=True)
class Item:
    """One topic or group of a migration as the store keeps it."""

    kind: str  # topic | group
    name: str
    state: str
    pending: str | None  # the step a command began and did not finish
    pending_since_ms: int | None
    updated_ms: int

    @property
    def topic_phase(self) -> TopicPhase:
        return TopicPhase(self.state)

    @property
    def group_phase(self) -> GroupPhase:
        return GroupPhase(self.state)


@dataclass(frozen=True)
class Event:
    """One line of the audit log."""

    at_ms: int
    actor: str
    action: str
    subjects: tuple[str, ...]
    outcome: str  # started | done | refused | failed
    detail: str | None


def promotable(phase: TopicPhase, order: SwitchOrder, has_groups: bool) -> bool:
    """Whether promote may follow ``phase``: consumers first needs them moved (if any)."""
    if order is SwitchOrder.CONSUMERS_FIRST and has_groups:
        return phase is TopicPhase.CONSUMERS_MOVED
    return phase is TopicPhase.IN_SYNC


def retirable(phase: TopicPhase, order: SwitchOrder, has_groups: bool) -> bool:
    """Retire follows the last switch: promote (consumers first) or the consumers' move."""
    if order is SwitchOrder.PRODUCERS_FIRST and has_groups:
        return phase is TopicPhase.CONSUMERS_MOVED
    return phase is TopicPhase.PROMOTED


def after_groups_moved(phase: TopicPhase, order: SwitchOrder) -> TopicPhase | None:
    """The topic's next phase once every group reading it has moved (None: unchanged)."""
    if order is SwitchOrder.CONSUMERS_FIRST and phase in MIRRORED:
        return TopicPhase.CONSUMERS_MOVED
    if order is SwitchOrder.PRODUCERS_FIRST and phase is TopicPhase.PROMOTED:
        return TopicPhase.CONSUMERS_MOVED
    return None
