"""`migrate status`: the one screen, and the next step each topic and group allows."""

from __future__ import annotations

from kmigrate.migration.observe import GroupMove, Snapshot
from kmigrate.migration.session import selector
from kmigrate.model.migrations import GroupPhase, SwitchOrder, TopicPhase, promotable, retirable
from kmigrate.model.runs import LIVE_STATES


def next_steps(snap: Snapshot) -> list[str]:
    """What the operator can do now, as commands (or what to wait for)."""
    m = snap.migration
    plan = m.plan
    steps: list[str] = []
    pending = [(t.pending, t.name) for t in snap.topics] + [
        (g.pending, g.name) for g in snap.groups
    ]
    for step, name in pending:
        if step:
            steps.append(f"finish the interrupted step: kmigrate migrate {step} {name}")
    if steps:
        return steps
    mirror_state = snap.mirror.state if snap.mirror else "never-started"
    phases = {t.name: t.phase for t in snap.topics}
    mirrored = [n for n, p in phases.items() if p in (TopicPhase.MIRRORING, TopicPhase.IN_SYNC)]
    if mirrored and mirror_state not in LIVE_STATES:
        steps.append(f"the mirror is {mirror_state}: resume it with kmigrate migrate start PLAN")
    planned = [n for n, p in phases.items() if p is TopicPhase.PLANNED]
    if planned:
        steps.append(_start_step(snap, planned))
    syncing = [n for n, p in phases.items() if p is TopicPhase.MIRRORING]
    if syncing:
        steps.append(f"wait: {', '.join(syncing)} in sync at lag <= {plan.in_sync_lag:,}")
    moved = {g.name for g in snap.groups if g.phase is GroupPhase.MOVED}
    ready_groups = [g.name for g in snap.groups if g.name not in moved and _group_ready(snap, g)]
    then = "on the gateway" if plan.via_gateway else f"on '{plan.target}'"
    if ready_groups:
        steps.append(
            "stop the consumers of "
            + ", ".join(ready_groups)
            + f" on '{plan.source}', then: kmigrate migrate consumers "
            + selector("group", ready_groups)
            + f"; restart them {then}"
        )
    promote = [
        n for n, p in phases.items() if promotable(p, plan.switch_order, bool(plan.groups_of(n)))
    ]
    if promote and plan.via_gateway:
        steps.append(
            f"with every producer of {', '.join(promote)} writing through the gateway: "
            f"kmigrate migrate promote {selector('topic', promote)} (they do not stop)"
        )
    elif promote:
        steps.append(
            f"stop the producers of {', '.join(promote)} on '{plan.source}', then: "
            f"kmigrate migrate promote {selector('topic', promote)}; "
            f"restart them on '{plan.target}'"
        )
    retire = [
        n for n, p in phases.items() if retirable(p, plan.switch_order, bool(plan.groups_of(n)))
    ]
    if retire:
        steps.append(
            f"verify and retire the source: kmigrate migrate retire {selector('topic', retire)}"
        )
    if phases and all(p is TopicPhase.DONE for p in phases.values()):
        steps.append("migration complete: every topic is DONE")
    return steps


def _start_step(snap: Snapshot, planned: list[str]) -> str:
    """Start the planned topics; in a plan cut in waves, the next wave's only."""
    for wave in snap.migration.plan.waves:
        waiting = [t for t in wave.topics if t in planned]
        if waiting:
            return (
                f"start wave {wave.number} ({', '.join(waiting)}): "
                f"kmigrate migrate start PLAN --wave {wave.number}"
            )
    return f"start mirroring {', '.join(planned)}: kmigrate migrate start PLAN"


def _group_ready(snap: Snapshot, group: GroupMove) -> bool:
    topics = group.topics
    phases = {t.name: t.phase for t in snap.topics}
    if snap.order is SwitchOrder.CONSUMERS_FIRST:
        ok = (TopicPhase.IN_SYNC, TopicPhase.CONSUMERS_MOVED)
    else:
        ok = (TopicPhase.PROMOTED, TopicPhase.CONSUMERS_MOVED)
    return all(phases.get(t) in ok for t in topics)
