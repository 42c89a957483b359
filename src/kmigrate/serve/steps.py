"""The guided migration's guarded steps as the API runs them: the same functions, lock
and audit log as `kmigrate migrate start | consumers | promote | retire | rollback`, so
CLI and server can work on one migration side by side and a refused step changes
nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kmigrate.config import Settings
from kmigrate.durations import seconds_of
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.consumers import move_consumers
from kmigrate.migration.plan import parse_plan
from kmigrate.migration.promote import promote_topics
from kmigrate.migration.report import start_json
from kmigrate.migration.retire import retire_topics
from kmigrate.migration.rollback import rollback_topics
from kmigrate.migration.selection import chosen
from kmigrate.migration.session import Migration, load_migration, locked
from kmigrate.migration.start import start_migration
from kmigrate.store import Store
from kmigrate.store.migrations import migration_plan_yaml, require_migration

STEPS = ("start", "consumers", "promote", "retire", "rollback")
Report = Callable[[str], None]


class StepRequest(BaseModel):
    """What a step acts on, and its options, in the CLI's vocabulary: ``topics`` and
    ``groups`` a regex matching whole names (a list of exact names is the older form),
    durations as ``"90s"``/``"15m"`` or seconds, ``yes`` to go ahead with a destructive
    step (retire's deletion on the source, rollback) and ``dry_run`` to only show it.
    The older ``apply`` and ``*_s`` fields are still read."""

    model_config = ConfigDict(extra="forbid")
    topics: str | list[str] = Field(default_factory=list)
    groups: str | list[str] = Field(default_factory=list)
    yes: bool = False
    dry_run: bool = False
    keep_source: bool = False
    quiet_period: float | None = None
    timeout: float = 300.0
    wait: float = 300.0

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        renamed = {"apply": "yes", "quiet_period_s": "quiet_period", "timeout_s": "timeout"}
        renamed["wait_s"] = "wait"
        data = dict(data)
        for old, new in renamed.items():
            if old in data:
                value = data.pop(old)
                data.setdefault(new, value)
        return data

    @field_validator("quiet_period", "timeout", "wait", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else seconds_of(value)

    @field_validator("topics", "groups")
    @classmethod
    def _regex(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, str):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"'{value}' is not a regex: {exc}") from None
        return value

    def picked(self, kind: str, m: Migration) -> list[str]:
        """The migration's topics (``kind`` "topic") or groups this request names."""
        given = self.topics if kind == "topic" else self.groups
        if isinstance(given, str):
            return chosen(m, kind, given, [])
        return chosen(m, kind, None, given)

    @property
    def goes_ahead(self) -> bool:
        return self.yes and not self.dry_run


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
    if isinstance(wanted, list) and not wanted:
        field_name = "groups" if step == "consumers" else "topics"
        raise ConfigError(f"{step} needs {field_name}: a regex, or a list of names")
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
        groups = request.picked("group", m)
        moved = move_consumers(m, groups, source, target, report, wait_s=request.wait)
        return {"migration": m.name, "groups": moved}
    if step == "promote":
        promoted = promote_topics(
            m,
            request.picked("topic", m),
            source,
            target,
            report,
            quiet_period_s=request.quiet_period,
            timeout_s=request.timeout,
        )
        return {
            "migration": m.name,
            "promoted": promoted.topics,
            "seconds": round(promoted.seconds, 3),
        }
    if step == "retire":
        retired = retire_topics(
            m,
            request.picked("topic", m),
            source,
            target,
            report,
            apply=request.goes_ahead,
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
    shown: dict[str, list[str]] = {}

    def go(todo: list[str], groups: list[str]) -> bool:
        shown.update(topics=todo, groups=groups)
        return request.goes_ahead

    done = rollback_topics(m, request.picked("topic", m), source, target, report, go=go)
    return {
        "migration": m.name,
        "rolled_back": done,
        "would_roll_back": [] if done else shown.get("topics", []),
        "groups_moved_back": shown.get("groups", []) if done else [],
        "outcome": "done" if done or not shown else "dry-run",
    }
