"""Which step buttons a migration page shows (pure): per topic the step its state leads
to, per group still on the source its move, and resuming a stopped mirror. The guard
decides when clicked; a button is only the operator's next likely move, with the
question it asks before acting."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from kmigrate.migration.observe import Snapshot
from kmigrate.model.migrations import MIRROR_NEEDED, GroupPhase, SwitchOrder, TopicPhase
from kmigrate.model.runs import LIVE_STATES


@dataclass(frozen=True)
class Button:
    step: str  # start | consumers | promote | retire | rollback
    label: str
    confirm: str  # asked before the step runs
    topic: str | None = None
    group: str | None = None
    yes: bool = False  # a destructive step: the question asked is the confirmation
    danger: bool = False  # a point of no return, drawn as such

    @property
    def query(self) -> str:
        fields = {"topic": self.topic, "group": self.group, "yes": "true" if self.yes else None}
        return urlencode({k: v for k, v in fields.items() if v is not None})


def buttons(snap: Snapshot) -> list[Button]:
    plan = snap.migration.plan
    source, target = plan.source, plan.target
    found: list[Button] = []
    interrupted = [(t.pending, t.name, None) for t in snap.topics] + [
        (g.pending, None, g.name) for g in snap.groups
    ]
    for pending, topic, group in interrupted:  # an interrupted step comes first
        if pending:
            of = topic or f"group {group}"
            found.append(
                Button(pending, f"Finish {pending} of {of}",
                       f"Finish the interrupted {pending} of {of}?", topic=topic, group=group)
            )  # fmt: skip
    if found:
        return found
    mirror = snap.mirror.state if snap.mirror else "never-started"
    waiting = [t.name for t in snap.topics if t.phase is TopicPhase.PLANNED]
    mirrored = [t for t in snap.topics if t.phase in (TopicPhase.MIRRORING, TopicPhase.IN_SYNC)]
    if waiting or (mirrored and mirror not in LIVE_STATES):
        found.append(
            Button("start", "Start mirroring" if waiting else "Resume the mirror",
                   f"Check the plan and mirror its topics from '{source}' to '{target}'?")
        )  # fmt: skip
    where = "the gateway" if plan.via_gateway else f"'{target}'"
    for g in snap.groups:
        if g.phase is GroupPhase.ON_SOURCE:
            found.append(
                Button("consumers", f"Move group {g.name}",
                       f"Move group {g.name} to {where} at its exactly translated offsets? "
                       f"Its consumers must be stopped on '{source}' first.", group=g.name)
            )  # fmt: skip
    consumers_first = plan.switch_order is SwitchOrder.CONSUMERS_FIRST
    for t in snap.topics:
        if t.phase in (TopicPhase.IN_SYNC, TopicPhase.MIRRORING) or (
            t.phase is TopicPhase.CONSUMERS_MOVED and consumers_first
        ):
            producers = (
                "Its producers keep writing through the gateway."
                if plan.via_gateway
                else f"Stop its producers on '{source}' first; restart them on '{target}'."
            )
            found.append(
                Button("promote", f"Promote {t.name}",
                       f"Promote {t.name}: '{target}' becomes the topic's home and the mirror "
                       f"stops copying it. {producers} Continue?", topic=t.name)
            )  # fmt: skip
        if t.phase is TopicPhase.PROMOTED or (
            t.phase is TopicPhase.CONSUMERS_MOVED and not consumers_first
        ):
            found.append(
                Button("retire", f"Verify and retire {t.name}",
                       f"Verify {t.name} record by record and mark it DONE? Nothing is deleted.",
                       topic=t.name)
            )  # fmt: skip
            found.append(
                Button("retire", f"Retire {t.name} and delete it on '{source}'",
                       f"Verify {t.name}, then DELETE it on '{source}'? This cannot be undone.",
                       topic=t.name, yes=True, danger=True)
            )  # fmt: skip
        if t.phase in MIRROR_NEEDED and not plan.via_gateway:
            found.append(
                Button("rollback", f"Roll back {t.name}",
                       f"Stop mirroring {t.name}, move its moved groups back to '{source}' "
                       f"and delete its copy on '{target}'?",
                       topic=t.name, yes=True, danger=True)
            )  # fmt: skip
    return found
