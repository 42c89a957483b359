"""The guided migration's guarded steps as the API runs them: the same functions, lock
and audit log as `kmigrate migrate start | consumers | promote | retire | rollback`, so
CLI and server can work on one migration side by side and a refused step changes
nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kmigrate.config import Settings
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.consumers import move_consumers
from kmigrate.migration.plan import parse_plan
from kmigrate.migration.promote import promote_topics
from kmigrate.migration.report import start_json
from kmigrate.migration.retire import retire_topics
from kmigrate.migration.rollback import rollback_topics
from kmigrate.migration.session import Migration, load_migration, locked
from kmigrate.migration.start import start_migration
from kmigrate.store import Store
from kmigrate.store.migrations import migration_plan_yaml, require_migration

STEPS = ("start", "consumers", "promote", "retire", "rollback")
Report = Callable[[str], None]


class StepRequest(BaseModel):
    """What a step acts on, and its options (the CLI's flags)."""

    model_config = ConfigDict(extra="forbid")
    topics: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    apply: bool = False  # retire: delete on the source (default: verify only)
    keep_source: bool = False
    quiet_period_s: float | None = Field(default=None, ge=0)
    timeout_s: float = Field(default=300.0, gt=0)
    wait_s: float = Field(default=300.0, gt=0)


def runner(
    settings: Settings, store: Store, name: str, step: str, request: StepRequest
) -> Callable[[Report], dict[str, Any]]:
    """The step as a function of its progress report; what is missing is refused now."""
    if step not in STEPS:
        raise ConfigError(f"unknown step '{step}' (one of {', '.join(STEPS)})")
    if step == "start":  # resume with the stored plan (a new plan: POST /api/migrations)
        stored = migration_plan_yaml(store, require_migration(store, name))
        assert stored is not None
        return start_runner(settings, store, stored, f"the stored plan of migration '{name}'")
    wanted = request.groups if step == "consumers" else request.topics
    if not wanted:
        field_name = "groups" if step == "consumers" else "topics"
        raise ConfigError(f"{step} needs {field_name}: name at least one")
    m = load_migration(store, settings, name)

    def run(report: Report) -> dict[str, Any]:
        with (
            ClusterAdmin(settings.cluster(m.plan.source)) as source,
            ClusterAdmin(settings.cluster(m.plan.target)) as target,
            locked(store, m.name, step, report),
        ):
            return _act(m, step, request, source, target, report)

    return run


def start_runner(
    settings: Settings, store: Store, plan_yaml: str, where: str
) -> Callable[[Report], dict[str, Any]]:
    """`kmigrate migrate start`: check the plan, copy its ACLs, start (or resume) its
    mirror. A plan that does not parse, or names a cluster clusters.yaml does not, is
    refused now."""
    plan = parse_plan(plan_yaml, where)
    settings.cluster(plan.source), settings.cluster(plan.target)

    def run(report: Report) -> dict[str, Any]:
        return start_json(plan, start_migration(settings, store, plan, plan_yaml, report))

    return run


def _act(
    m: Migration,
    step: str,
    request: StepRequest,
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: Report,
) -> dict[str, Any]:
    if step == "consumers":
        moved = move_consumers(m, request.groups, source, target, report, wait_s=request.wait_s)
        return {"migration": m.name, "groups": moved}
    if step == "promote":
        promoted = promote_topics(
            m,
            request.topics,
            source,
            target,
            report,
            quiet_period_s=request.quiet_period_s,
            timeout_s=request.timeout_s,
        )
        return {
            "migration": m.name,
            "promoted": promoted.topics,
            "seconds": round(promoted.seconds, 3),
        }
    if step == "retire":
        retired = retire_topics(
            m,
            request.topics,
            source,
            target,
            report,
            apply=request.apply,
            keep_source=request.keep_source,
            on_verify=lambda _r: None,
        )
        return {
            "migration": m.name,
            "topics": retired.topics,
            "applied": retired.applied,
            "deleted_on_source": retired.deleted,
            "verified": None if retired.verify is None else retired.verify.ok,
        }
    done = rollback_topics(m, request.topics, source, target, report)
    return {"migration": m.name, "rolled_back": done}
