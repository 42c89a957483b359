"""`migrate promote --topics REGEX`: stop mirroring topics and make the target copies writable.

Guards: the topic reached its promote point for the switch order (consumers moved,
or in sync for producers first); no producer wrote to the source topic for the
plan's quiet period (its end offsets stood still); the mirror then copies the last
records (lag 0) and drops the topic. Producers may switch to the target afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kmigrate.gateway.control.partition_moves import held_text
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration import via_gateway
from kmigrate.migration.authorization import target_differences
from kmigrate.migration.mirroring import stop_if_idle
from kmigrate.migration.observe import observe
from kmigrate.migration.session import Migration, Report, Step, selector
from kmigrate.mirror.control import promote as promote_link
from kmigrate.model.links import TopicState
from kmigrate.model.migrations import GroupPhase, TopicPhase, promotable
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store.links import link_topics_of
from kmigrate.store.migrations import set_state

PROMOTE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class PromoteResult:
    topics: list[str]
    quiet_s: float  # how long the source stood still before promote
    seconds: float  # from the command's start to the topics being writable


def promote_topics(
    m: Migration,
    topics: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
    *,
    quiet_period_s: float | None = None,
    timeout_s: float = PROMOTE_TIMEOUT_S,
) -> PromoteResult:
    began = time.monotonic()
    step = Step(m, "promote", "topic", topics, report)
    snap = observe(m, source, target)
    linked = {t.topic: t.state for t in link_topics_of(m.store, m.name)}
    todo = []
    for name in topics:
        view = snap.topic(name)
        if view.phase is TopicPhase.PROMOTED and view.pending is None:
            continue
        if name in step.resuming and linked.get(name) is TopicState.PROMOTED:
            todo.append(name)
            continue
        has_groups = bool(m.plan.groups_of(name))
        if not promotable(view.phase, m.plan.switch_order, has_groups):
            step.refuse(_not_yet(m, name, view.phase, has_groups))
        mirror = snap.mirror.state if snap.mirror else "never-started"
        if view.lag != 0 and mirror not in LIVE_STATES:
            step.refuse(
                f"topic {name} is {_lag(view.lag)} behind the source and the mirror is "
                f"{mirror}; resume it (kmigrate migrate start PLAN), then promote"
            )
        todo.append(name)
    quiet = m.plan.quiet_period_s if quiet_period_s is None else quiet_period_s
    waiting = [t for t in todo if linked.get(t) is not TopicState.PROMOTED]
    _guard_authorization(m, step, waiting, source, target)
    if m.plan.via_gateway:
        if todo:
            _through_gateway(m, step, todo, waiting, timeout_s, report)
        return PromoteResult(todo, 0.0, time.monotonic() - began)
    if waiting:
        _guard_quiet(step, source, m, waiting, quiet)
    if todo:
        with step.acting():
            if waiting:
                promote_link(
                    m.store, m.settings, m.name, m.plan.topics_regex(waiting), timeout_s, report
                )
            for name in todo:
                set_state(m.store, m.name, "topic", name, TopicPhase.PROMOTED.value)
            stop_if_idle(m, report)
    return PromoteResult(todo, quiet, time.monotonic() - began)


def _through_gateway(
    m: Migration,
    step: Step,
    todo: list[str],
    waiting: list[str],
    timeout_s: float,
    report: Report,
) -> None:
    """Producers keep writing through the gateway: no quiet period. Per topic the
    gateway holds its writes while the mirror copies the last records, then flips it
    to the target (kmigrate.migration.via_gateway)."""
    sizes = {t.name: t.partitions for t in m.plan.topics}
    registry = via_gateway.gateway_of(m.settings, m.plan)
    try:
        with step.acting():
            for name in todo:

                def copy_last(name: str = name) -> None:
                    if name in waiting:
                        promote_link(
                            m.store, m.settings, m.name, m.plan.topics_regex([name]),
                            timeout_s, report,
                        )  # fmt: skip

                moved = via_gateway.promote(
                    m.settings, registry, m.plan, name, sizes[name], copy_last, report
                )
                if moved:
                    last = "the mirror's last records"
                    held = held_text(moved[0].fence_ms, moved[0].fence_steps_ms, last)
                    report(f"{name}: flipped to '{m.plan.target}' in the gateway; {held}")
                set_state(m.store, m.name, "topic", name, TopicPhase.PROMOTED.value)
            stop_if_idle(m, report)
    finally:
        registry.close()


def _not_yet(m: Migration, name: str, phase: TopicPhase, has_groups: bool) -> str:
    if phase is TopicPhase.PLANNED:
        return f"topic {name} is not mirrored yet; run `kmigrate migrate start` first"
    if phase in (TopicPhase.DONE, TopicPhase.CONSUMERS_MOVED):
        return f"topic {name} is {phase.value}: already promoted"
    groups = m.groups()
    unmoved = [g for g in m.plan.groups_of(name) if groups[g].group_phase is not GroupPhase.MOVED]
    if has_groups and unmoved and phase is TopicPhase.IN_SYNC:
        return (
            f"topic {name} is still read on the source by group(s) {', '.join(unmoved)}; "
            "move them first (consumers first): kmigrate migrate consumers "
            + selector("group", unmoved)
        )
    return f"topic {name} is {phase.value}, not in sync yet; promote needs it in sync"


def _guard_authorization(
    m: Migration, step: Step, topics: list[str], source: ClusterAdmin, target: ClusterAdmin
) -> None:
    """Clients moved to the target may do there exactly what they could on the source."""
    if not topics:
        return
    groups = sorted({g for t in topics for g in m.plan.groups_of(t)})
    changed = target_differences([a.entry() for a in m.plan.acls], topics, groups, source, target)
    if changed:
        step.refuse(
            f"target '{m.plan.target}' authorizes differently from source '{m.plan.source}': "
            + "; ".join(changed[:3])
            + " (as target: source); give the target the same ACLs and authorizer settings"
        )


def _guard_quiet(
    step: Step, source: ClusterAdmin, m: Migration, topics: list[str], quiet_s: float
) -> None:
    """Refuse while producers still write: the source end offsets must stand still."""
    sizes = {t.name: t.partitions for t in m.plan.topics}
    pairs = [(t, p) for t in topics for p in range(sizes[t])]
    before = source.partition_offsets(pairs, "latest")
    if quiet_s > 0:
        step.report(f"checking that no producer writes to {', '.join(topics)} for {quiet_s:g}s")
        time.sleep(quiet_s)  # the quiet period itself is what this guard measures
    after = source.partition_offsets(pairs, "latest")
    moved = {tp: after[tp] - before[tp] for tp in pairs if after[tp] != before[tp]}
    if moved:
        busy = sorted({t for t, _ in moved})
        step.refuse(
            f"producers still write to {', '.join(busy)} on source '{m.plan.source}' "
            f"({sum(moved.values()):,} record(s) in the last {quiet_s:g}s); stop them, then promote"
        )


def _lag(lag: int | None) -> str:
    return "an unknown number of records" if lag is None else f"{lag:,} record(s)"
