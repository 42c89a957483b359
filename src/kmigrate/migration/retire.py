"""`migrate retire --topics REGEX`: prove the copy, then retire the source topic (DONE).

Guards: the last switch happened (promote, or the consumers' move for producers
first); nothing was written to the source topic after promote; no planned group
still consumes it on the source; and verify passes record by record. Without
`apply` (or when the caller's `go` says no) it stops there and changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration import via_gateway
from kmigrate.migration.mirroring import stop_if_idle
from kmigrate.migration.observe import observe
from kmigrate.migration.session import Migration, Report, Step
from kmigrate.model.links import TopicState
from kmigrate.model.migrations import TopicPhase, retirable
from kmigrate.spark.session import build_context
from kmigrate.store.links import require_link, set_topic_state
from kmigrate.store.migrations import set_state
from kmigrate.store.offsets import load_partitions
from kmigrate.verify.job import Sides, plan_link, verify
from kmigrate.verify.report import CHANGED_DURING_CHECK, MISMATCH, VerifyReport


@dataclass(frozen=True)
class RetireResult:
    topics: list[str]
    verify: VerifyReport | None  # None when resuming past a verify that passed
    applied: bool
    deleted: list[str]


def retire_topics(
    m: Migration,
    topics: list[str],
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
    *,
    apply: bool,
    keep_source: bool,
    on_verify: Callable[[VerifyReport], None] = lambda _r: None,
    go: Callable[[list[str]], bool] = lambda _todo: True,
) -> RetireResult:
    """Guard and verify ``topics``; then, with ``apply`` and when ``go`` (shown the
    topics about to be retired) agrees, retire them."""
    step = Step(m, "retire", "topic", topics, report)
    snap = observe(m, source, target)
    todo = []
    for name in topics:
        view = snap.topic(name)
        if view.phase is TopicPhase.DONE and view.pending is None:
            continue
        todo.append(name)
        if name in step.resuming:
            continue
        if not retirable(view.phase, m.plan.switch_order, bool(m.plan.groups_of(name))):
            step.refuse(
                f"topic {name} is {view.phase.value}; retire comes after "
                + ("the consumers' move" if view.phase is TopicPhase.PROMOTED else "promote")
            )
        _guard_unwritten(step, source, m, name)
        busy = [g.name for g in snap.groups if name in g.topics and g.source.members]
        if busy:
            step.refuse(
                f"group(s) {', '.join(busy)} still consume {name} on source '{m.plan.source}'; "
                "stop them first"
            )
        if m.plan.via_gateway:
            _guard_read_past(step, m, target, name)
    fresh = [t for t in todo if t not in step.resuming]
    proof = _verify(m, source, target, fresh, report) if fresh else None
    if proof is not None:
        on_verify(proof)
        if not proof.ok:
            bad = next(p for p in proof.partitions if p.status in (MISMATCH, CHANGED_DURING_CHECK))
            step.refuse(
                f"verify found {bad.topic}[{bad.partition}] {bad.status}: {bad.message}; "
                "the source topic stays"
            )
    if not apply or not todo or not go(todo):
        return RetireResult(todo, proof, False, [])
    deleted: list[str] = []
    with step.acting():
        if not keep_source:
            present = {t.name for t in source.describe_topics_if_present(todo)}
            if present:
                source.delete_topics(sorted(present))
                deleted = sorted(present)
        for name in todo:
            set_topic_state(m.store, m.name, name, TopicState.SOURCE_DELETED)
            set_state(m.store, m.name, "topic", name, TopicPhase.DONE.value)
        stop_if_idle(m, report)
    return RetireResult(todo, proof, True, deleted)


def _guard_read_past(step: Step, m: Migration, target: ClusterAdmin, topic: str) -> None:
    """Through the gateway, offsets below the migration offset are read on the source:
    refuse while a group on the group home has not read past them."""
    registry = via_gateway.gateway_of(m.settings, m.plan)
    try:
        behind = via_gateway.behind(target, registry.read_routes(), topic)
    finally:
        registry.close()
    if behind:
        step.refuse(
            f"group(s) still read {topic} below its migration offset, on the source: "
            f"{', '.join(behind)}; let them read on, then retire"
        )


def _guard_unwritten(step: Step, source: ClusterAdmin, m: Migration, topic: str) -> None:
    """Refuse when the source topic holds records the mirror never copied (written after
    promote): retiring it would lose them."""
    states = {s.partition: s for s in load_partitions(m.store, m.name, topic)}
    ends = source.partition_offsets([(topic, p) for p in states], "latest", committed_only=True)
    behind = {p: ends[(topic, p)] - s.map.source_next for p, s in states.items()}
    late = {p: n for p, n in behind.items() if n > 0}
    if late:
        step.refuse(
            f"{sum(late.values()):,} record(s) were written to {topic} on source "
            f"'{m.plan.source}' after promote and are not on the target; move them, then retire"
        )


def _verify(
    m: Migration, source: ClusterAdmin, target: ClusterAdmin, topics: list[str], report: Report
) -> VerifyReport:
    link = require_link(m.store, m.name)
    settings = m.settings
    sides = Sides(settings.cluster(link.source), settings.cluster(link.target), source, target)
    pattern = re.compile(m.plan.topics_regex(topics))
    report(f"verifying {', '.join(topics)} record by record (Spark)")
    return verify(
        lambda: build_context(settings.spark, "kmigrate-verify"),
        sides,
        lambda: plan_link(m.store, link, pattern, sides),
        mode="link",
        link=link.name,
        progress=report,
    )
