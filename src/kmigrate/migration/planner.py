"""`plan new`: write a plan from what the source cluster holds now."""

from __future__ import annotations

import re

from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.acls import NOT_TOPIC_OR_GROUP, acl_support, split_acls
from kmigrate.migration.plan import Plan, PlannedAcl, PlannedGroup, PlannedTopic, SkippedAcl
from kmigrate.model.links import compile_topics, default_link_name
from kmigrate.model.migrations import SwitchOrder


def new_plan(
    source: ClusterAdmin,
    *,
    target: str,
    topics: str,
    groups: str | None,
    order: SwitchOrder,
    name: str | None,
) -> Plan:
    """The plan for ``topics`` (and the ``groups`` that read them) as the source is now."""
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
    acls, skipped = _acls(source, names, [g.name for g in planned_groups])
    return Plan(
        name=name or default_link_name(src, target),
        source=src,
        target=target,
        switch_order=order,
        topics=planned_topics,
        groups=planned_groups,
        acls=acls,
        acls_not_copied=skipped,
    )


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
    source: ClusterAdmin, topics: list[str], groups: list[str]
) -> tuple[list[PlannedAcl], list[SkippedAcl]]:
    support = acl_support(source)
    if support.acls is None:
        return [], []
    chosen, skipped = split_acls(support.acls, topics, groups)
    return (
        [PlannedAcl(**vars(a)) for a in chosen],
        [SkippedAcl(**vars(a), reason=NOT_TOPIC_OR_GROUP) for a in skipped],
    )
