"""What a migration carries besides topics, groups and ACLs: client quotas and the
Schema Registry.

`plan new` writes the source's quotas into the plan (user names as the principal map
gives them on the target) and, when both clusters name a registry, that the schemas are
copied; the operator reviews and edits both like the rest of the plan. `plan check` and
`migrate start` refuse a target registry that conflicts with the source's; `migrate
start` sets the quotas and copies the schemas before the mirror starts, so consumers on
the target can read every mirrored record. Both are idempotent: a start run again, or
another wave's, writes only what is missing.
"""

from __future__ import annotations

from kmigrate.config import ClusterConfig
from kmigrate.errors import ConflictError
from kmigrate.identity.principals import PrincipalMap
from kmigrate.identity.quota_copy import read_quotas, set_missing
from kmigrate.identity.quotas import remapped
from kmigrate.migration.plan import Plan, PlannedQuota, PlannedSchemas, QuotaEntity
from kmigrate.migration.session import Report
from kmigrate.model.quotas import Entity
from kmigrate.schemas.between import carry_out, planned, read_registry


def planned_quotas(
    source: ClusterConfig, principals: PrincipalMap
) -> tuple[list[PlannedQuota], list[str]]:
    """The source's client quotas as the plan lists them, and one line per entity not
    copied (the map gives its user no name on the target)."""
    wanted, lost = remapped(read_quotas(source), principals)
    return [
        PlannedQuota(
            entity=[
                QuotaEntity.model_validate({"type": kind, "name": name}) for kind, name in entity
            ],
            values=dict(sorted(values.items())),
        )
        for entity, values in sorted(wanted.items(), key=lambda item: str(item[0]))
    ], lost


def planned_schemas(source: ClusterConfig, target: ClusterConfig) -> PlannedSchemas | None:
    """What the source's registry holds, to copy (None: a cluster names no registry)."""
    if source.schema_registry is None or target.schema_registry is None:
        return None
    view = read_registry(source)
    return PlannedSchemas(enabled=True, subjects=len(view.subjects), versions=len(view.versions))


def schema_problems(plan: Plan, source: ClusterConfig, target: ClusterConfig) -> list[str]:
    """Why the schemas could not be copied now: a cluster without a registry, or the
    target's registry conflicting with the source's."""
    if plan.schemas is None or not plan.schemas.enabled:
        return []
    missing = [c.name for c in (source, target) if c.schema_registry is None]
    if missing:
        return [
            f"the plan copies schemas, but cluster {missing[0]} names no schema_registry in "
            "clusters.yaml; add it, or set schemas.enabled: false in the plan"
        ]
    return [f"schema registry: {line}" for line in planned(source, target).plan.conflicts]


def copy_quotas(target: ClusterConfig, plan: Plan) -> int:
    """Set on the target the plan's quota values it does not hold yet; entities set."""
    if not plan.quotas:
        return 0
    wanted: dict[Entity, dict[str, float]] = {q.key(): dict(q.values) for q in plan.quotas}
    return len(set_missing(target, wanted).writes)


def copy_schemas(plan: Plan, source: ClusterConfig, target: ClusterConfig, report: Report) -> int:
    """Copy the source's registry to the target's (same ids); versions registered."""
    if plan.schemas is None or not plan.schemas.enabled:
        return 0
    copy = planned(source, target).plan
    if copy.conflicts:  # written on the target since the check: still nothing written
        raise ConflictError(f"schema registry: {copy.conflicts[0]}; nothing was written")
    carry_out(target, copy, report)
    return len(copy.register)
