"""`migrate start PLAN`: check the plan, record the migration, copy ACLs, quotas and
schemas, start the mirror.

Safe to run again: after a crash it resumes (restarts a dead mirror, finishes an
interrupted start), after a rollback it starts the rolled-back topics again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kmigrate.config import Settings
from kmigrate.errors import ConflictError
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration import via_gateway
from kmigrate.migration.acls import copy_acls
from kmigrate.migration.check import CheckReport, check_plan
from kmigrate.migration.identity import copy_quotas, copy_schemas
from kmigrate.migration.mirroring import ensure_mirror, mirror_running, mirrored_topics
from kmigrate.migration.plan import Plan
from kmigrate.migration.session import Migration, Report, Step, locked
from kmigrate.model.cluster import AclEntry
from kmigrate.model.migrations import GroupPhase, TopicPhase
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of
from kmigrate.store.migrations import add_item, items_of, migration_names, save_migration, set_state


@dataclass
class StartResult:
    started: list[str]
    check: CheckReport
    acls_copied: list[AclEntry] = field(default_factory=list)
    acl_problem: str | None = None
    quotas_set: int = 0
    schemas_registered: int = 0
    mirror_restarted: bool = False


def start_migration(
    settings: Settings,
    store: Store,
    plan: Plan,
    plan_yaml: str,
    report: Report,
    *,
    sample_s: float = 2.0,
    only: list[str] | None = None,
) -> StartResult:
    """``only``: start just these topics (a wave); the plan's others stay PLANNED and
    are neither checked nor mirrored yet."""
    source_cfg, target_cfg = settings.cluster(plan.source), settings.cluster(plan.target)
    with ClusterAdmin(source_cfg) as source, ClusterAdmin(target_cfg) as target:
        check = check_plan(
            plan, store, source, target, sample_s=sample_s, started=_skipped(store, plan, only)
        )
        registry = via_gateway.gateway_of(settings, plan) if plan.via_gateway else None
        problems = list(check.problems)
        if registry is not None:
            problems += via_gateway.check_routes(registry.read_routes(), plan)
        if problems:
            if registry is not None:
                registry.close()
            raise ConflictError(
                f"the plan has {len(problems)} problem(s), nothing started: " + "; ".join(problems)
            )
        try:
            return _start(settings, store, plan, plan_yaml, report, check, target, registry, only)
        finally:
            if registry is not None:
                registry.close()


def _start(
    settings: Settings,
    store: Store,
    plan: Plan,
    plan_yaml: str,
    report: Report,
    check: CheckReport,
    target: ClusterAdmin,
    registry: Registry | None,
    only: list[str] | None,
) -> StartResult:
    known = plan.name in migration_names(store)
    save_migration(store, plan.name, plan.source, plan.target, plan_yaml)
    m = Migration(plan.name, plan, store, settings)
    with locked(store, plan.name, "start", report):
        for t in plan.topics:
            add_item(store, m.name, "topic", t.name, TopicPhase.PLANNED.value)
        for g in plan.groups:
            add_item(store, m.name, "group", g.name, GroupPhase.ON_SOURCE.value)
        items = m.topics()
        todo = [
            t
            for t in plan.topic_names()
            if (items[t].state == TopicPhase.PLANNED.value or items[t].pending == "start")
            and (only is None or t in only)
        ]
        result = StartResult(todo, check)
        if not todo:
            if known and not mirror_running(m):
                report("resuming: the mirror was not running")
                ensure_mirror(m, mirrored_topics(m), report)
                result.mirror_restarted = True
            return result
        step = Step(m, "start", "topic", todo, report)
        with step.acting():
            result.acls_copied, result.acl_problem = copy_acls(
                target, [a.entry() for a in plan.acls]
            )
            result.quotas_set = copy_quotas(target.cluster, plan)
            result.schemas_registered = copy_schemas(
                plan, settings.cluster(plan.source), target.cluster, report
            )
            ensure_mirror(m, mirrored_topics(m, also=todo), report)
            linked = {t.topic for t in link_topics_of(store, m.name)}
            for topic in todo:
                if topic not in linked:
                    raise ConflictError(f"the mirror did not take up topic {topic}")
            if registry is not None:
                via_gateway.route_to_source(registry, plan, report)
            for topic in todo:
                set_state(store, m.name, "topic", topic, TopicPhase.MIRRORING.value)
        return result


def _skipped(store: Store, plan: Plan, only: list[str] | None) -> tuple[set[str], set[str]]:
    """Topics and groups the check leaves out: started ones, and those outside ``only``."""
    topics, groups = _started(store, plan.name)
    if only is not None:
        topics |= set(plan.topic_names()) - set(only)
        groups |= {g.name for g in plan.groups if not set(g.topics) <= set(only)}
    return topics, groups


def _started(store: Store, name: str) -> tuple[set[str], set[str]]:
    """Topics past PLANNED and groups already moved: an earlier start checked them."""
    topics = {i.name for i in items_of(store, name, "topic") if i.state != TopicPhase.PLANNED.value}
    groups = {i.name for i in items_of(store, name, "group") if i.state == GroupPhase.MOVED.value}
    return topics, groups
