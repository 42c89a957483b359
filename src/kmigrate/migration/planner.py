"""`plan new`: write a plan from what the source cluster holds now."""

from __future__ import annotations

import re

from kmigrate.config import ClusterConfig
from kmigrate.errors import AuthorizationError, ConfigError, KafkaOperationError
from kmigrate.identity.principals import PrincipalMap
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.acls import NOT_TOPIC_OR_GROUP, acl_support, split_acls
from kmigrate.migration.identity import planned_quotas, planned_schemas
from kmigrate.migration.plan import (
    Plan,
    PlannedAcl,
    PlannedGroup,
    PlannedQuota,
    PlannedTopic,
    PlannedWave,
    SkippedAcl,
    WaveSizing,
)
from kmigrate.migration.sizing import measure
from kmigrate.migration.waves import Bounds, plan_waves
from kmigrate.model.cluster import TopicInfo
from kmigrate.model.links import compile_topics, default_link_name
from kmigrate.model.migrations import SwitchOrder

UNMAPPED = "the principal map gives this principal no principal on the target"


def new_plan(
    source: ClusterAdmin,
    *,
    target: str,
    topics: str,
    groups: str | None,
    order: SwitchOrder,
    name: str | None,
    bounds: Bounds | None = None,
    rate_from: str = "assumed",
    principals: PrincipalMap | None = None,
    target_cluster: ClusterConfig | None = None,
) -> Plan:
    """The plan for ``topics`` (and the ``groups`` that read them) as the source is now;
    with ``bounds``, cut into waves when it does not fit in one (see `waves`)."""
    topic_re = compile_topics(topics)
    group_re = compile_topics(groups) if groups else None
    src = source.cluster.name
    found = [t for t in source.list_topics() if not t.internal and topic_re.fullmatch(t.name)]
    if not found:
        raise ConfigError(f"no topic on cluster '{src}' matches --topics '{topics}'")
    described = source.describe_topics([t.name for t in found])
    planned_topics = [
        PlannedTopic(name=t.name, partitions=t.partition_count, configs=dict(t.configs))
        for t in described
    ]
    names = [t.name for t in planned_topics]
    planned_groups = _groups(source, group_re, names) if group_re else []
    acls, skipped = _acls(
        source, names, [g.name for g in planned_groups], principals or PrincipalMap()
    )
    sizing, waves = (
        _waves(source, described, planned_groups, bounds, rate_from) if bounds else (None, [])
    )
    quotas, quotas_lost = _quotas(source.cluster, principals or PrincipalMap())
    schemas = planned_schemas(source.cluster, target_cluster) if target_cluster else None
    return Plan(
        name=name or default_link_name(src, target),
        source=src,
        target=target,
        switch_order=order,
        topics=planned_topics,
        groups=planned_groups,
        acls=acls,
        acls_not_copied=skipped,
        quotas=quotas,
        quotas_not_copied=quotas_lost,
        schemas=schemas,
        wave_sizing=sizing,
        waves=waves,
    )


def _quotas(
    source: ClusterConfig, principals: PrincipalMap
) -> tuple[list[PlannedQuota], list[str]]:
    """The source's client quotas; none, with the reason, when kmigrate cannot read them
    (not allowed, a login its quota client lacks): the plan says so and copies none."""
    try:
        return planned_quotas(source, principals)
    except (AuthorizationError, ConfigError, KafkaOperationError) as exc:
        return [], [f"the source's quotas were not read: {exc.message}"]


def _waves(
    source: ClusterAdmin,
    described: list[TopicInfo],
    groups: list[PlannedGroup],
    bounds: Bounds,
    rate_from: str,
) -> tuple[WaveSizing | None, list[PlannedWave]]:
    """The waves, or none when the whole plan fits in one wave within the bounds."""
    measured = measure(source, described)
    waves = plan_waves(measured.sizes, {g.name: g.topics for g in groups}, bounds)
    if len(waves) == 1 and waves[0].over_bounds is None:
        return None, []
    sizing = WaveSizing.model_validate(
        {
            "max_bytes": bounds.max_bytes,
            "max_copy_s": bounds.max_seconds,
            "mirror_rate": bounds.records_per_s,
            "rate_from": rate_from,
            "bytes_from": measured.bytes_from,
        }
    )
    return sizing, [
        PlannedWave(
            number=w.number,
            topics=list(w.topics),
            groups=list(w.groups),
            bytes=w.bytes,
            records=w.records,
            copy_s=round(w.seconds, 1),
            over_bounds=w.over_bounds,
        )
        for w in waves
    ]


def _groups(
    source: ClusterAdmin, pattern: re.Pattern[str], topics: list[str]
) -> list[PlannedGroup]:
    chosen = []
    for summary in source.list_groups():
        if not pattern.fullmatch(summary.group_id):
            continue
        info = source.describe_group(summary.group_id)
        read = sorted({o.topic for o in info.offsets if o.topic in topics})
        if not read:
            continue
        chosen.append(
            PlannedGroup(
                name=info.group_id,
                topics=read,
                members=len(info.members),
                lag=sum(o.lag or 0 for o in info.offsets if o.topic in read),
            )
        )
    return chosen


def _acls(
    source: ClusterAdmin, topics: list[str], groups: list[str], principals: PrincipalMap
) -> tuple[list[PlannedAcl], list[SkippedAcl]]:
    """The ACLs to copy, principals as the map names them on the target; one the map
    gives no principal there is listed with why, not copied."""
    support = acl_support(source)
    if support.acls is None:
        return [], []
    chosen, skipped = split_acls(support.acls, topics, groups)
    planned, unmapped = [], []
    for a in chosen:
        principal = principals.apply(a.principal)
        if principal is None:
            unmapped.append(SkippedAcl(**vars(a), reason=UNMAPPED))
        else:
            planned.append(PlannedAcl(**(vars(a) | {"principal": principal})))
    return (
        planned,
        [SkippedAcl(**vars(a), reason=NOT_TOPIC_OR_GROUP) for a in skipped] + unmapped,
    )
