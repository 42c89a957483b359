"""What a migration looks like now: states from the store, lag and rates from the clusters.

Observing also records the one transition no command makes: a topic becomes IN_SYNC
once the mirror is within the plan's `in_sync_lag` of the source, and MIRRORING again
if it falls more than twice that behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.groups.view import GroupView, view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.session import Migration
from kmigrate.mirror.status import LinkStatus, link_status
from kmigrate.model.migrations import MIRROR_NEEDED, GroupPhase, Item, SwitchOrder, TopicPhase
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store.links import get_link
from kmigrate.store.migrations import record_event, set_state


@dataclass(frozen=True)
class TopicView:
    name: str
    phase: TopicPhase
    pending: str | None
    partitions: int
    lag: int | None  # source offsets not mirrored yet (None: unknown)
    records_per_s: float
    to_in_sync_s: float | None  # estimate while MIRRORING (None: unknown)


@dataclass(frozen=True)
class GroupMove:
    name: str
    phase: GroupPhase
    pending: str | None
    topics: tuple[str, ...]
    source: GroupView
    target: GroupView
    source_lag: int  # records the group has not consumed on the source


@dataclass(frozen=True)
class Snapshot:
    migration: Migration
    mirror: LinkStatus | None  # None until the link exists
    topics: list[TopicView]
    groups: list[GroupMove]

    @property
    def order(self) -> SwitchOrder:
        return self.migration.plan.switch_order

    def topic(self, name: str) -> TopicView:
        return next(t for t in self.topics if t.name == name)


def observe(m: Migration, source: ClusterAdmin, target: ClusterAdmin) -> Snapshot:
    link = get_link(m.store, m.name)
    status = link_status(m.store, link, source, target) if link else None
    items = m.topics()
    topics = []
    for planned in m.plan.topics:
        item = items.get(planned.name)
        if item is None:
            continue
        item = _refresh_sync(m, item, status)
        topics.append(_topic_view(planned.name, planned.partitions, item, status))
    group_items = m.groups()
    groups = [
        _group_view(source, target, planned.name, tuple(planned.topics), group_items[planned.name])
        for planned in m.plan.groups
        if planned.name in group_items
    ]
    return Snapshot(m, status, topics, groups)


def _lag_and_rate(status: LinkStatus | None, topic: str) -> tuple[int | None, float]:
    if status is None:
        return None, 0.0
    parts = [p for p in status.partitions if p.topic == topic]
    if not parts or any(p.lag is None for p in parts):
        return None, sum(p.records_per_s for p in parts)
    return sum(p.lag or 0 for p in parts), sum(p.records_per_s for p in parts)


def _refresh_sync(m: Migration, item: Item, status: LinkStatus | None) -> Item:
    phase = item.topic_phase
    if phase not in (TopicPhase.MIRRORING, TopicPhase.IN_SYNC) or item.pending:
        return item
    lag, _ = _lag_and_rate(status, item.name)
    if lag is None:
        return item
    running = status is not None and status.state in LIVE_STATES
    # Hysteresis: in sync at <= in_sync_lag, out of sync only past twice that, so a
    # topic does not flap between the two while the mirror's batches come and go.
    limit = m.plan.in_sync_lag * (2 if phase is TopicPhase.IN_SYNC else 1)
    want = TopicPhase.IN_SYNC if lag <= limit and (running or lag == 0) else TopicPhase.MIRRORING
    if want is phase:
        return item
    if set_state(m.store, m.name, "topic", item.name, want.value, only_from=phase.value):
        detail = f"lag {lag:,} (threshold {m.plan.in_sync_lag:,})"
        record_event(m.store, m.name, want.value.lower(), [item.name], "observed", detail)
    return Item(item.kind, item.name, want.value, None, None, item.updated_ms)


def _topic_view(name: str, partitions: int, item: Item, status: LinkStatus | None) -> TopicView:
    lag, rate = _lag_and_rate(status, name)
    eta = None
    if item.topic_phase is TopicPhase.MIRRORING and lag is not None and rate > 0:
        eta = lag / rate
    if item.topic_phase not in MIRROR_NEEDED:
        rate = 0.0
    return TopicView(name, item.topic_phase, item.pending, partitions, lag, rate, eta)


def _group_view(
    source: ClusterAdmin, target: ClusterAdmin, name: str, topics: tuple[str, ...], item: Item
) -> GroupMove:
    on_source = view_group(source, name)
    on_target = view_group(target, name)
    lag = on_source.lag(topics)
    return GroupMove(name, item.group_phase, item.pending, topics, on_source, on_target, lag)
