"""Guided migrations whose clients use the kmigrate gateway (`plan new --via-gateway`,
seed 002's zero-downtime linking on stock Kafka targets).

* start: the plan's topics are routed to the source in the gateway (writes and reads
  go there until promote); the gateway's group home is the target.
* consumers: a stopped group's source commits are copied as they are to the group
  home (until promote the gateway serves the source's offsets); its consumers restart
  on the gateway.
* promote: the gateway fences the topic's writes, the mirror copies the last records
  and drops the topic, and the partitions flip to the target with the source's end
  offset as their migration offset (kmigrate.gateway.control.mover); parked writes go on to the
  target. Producers never stop; consumers read on at the same offsets.
* retire: the source topic goes only once every group on the group home has read
  past the migration offsets (below them, reads still come from the source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError, GroupActiveError
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.control.shared_state import Registry, configured
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.plan import Plan
from kmigrate.model.cluster import TopicPartitionOffset

if TYPE_CHECKING:
    from kmigrate.gateway.control import mover

Report = Callable[[str], None]


def gateway_of(settings: Settings, plan: Plan) -> Registry:
    """The gateway's registry, refused (one line) when its group home is not the target."""
    registry, home = configured(settings)
    if home != plan.target:
        registry.close()
        raise ConfigError(
            f"the gateway's group home is '{home}'; a --via-gateway migration to "
            f"'{plan.target}' needs it to be the target (clusters.yaml 'gateway: group_home:')"
        )
    return registry


def check_routes(table: RoutingTable, plan: Plan) -> list[str]:
    """Problems with the plan's topics in the gateway's routing table. Pure."""
    problems = []
    for name in plan.topic_names():
        route = table.topics.get(name)
        if route is None:
            continue
        if route.migrations:
            problems.append(f"topic {name} has partition migrations in the gateway already")
        elif route.clusters() != {plan.source}:
            where = ", ".join(sorted(route.clusters()))
            problems.append(
                f"topic {name} is routed to {where} in the gateway; the migration needs it on "
                f"the source '{plan.source}'"
            )
    return problems


def route_to_source(registry: Registry, plan: Plan, report: Report) -> list[str]:
    """Route the plan's unrouted topics to the source; returns those routed now."""
    table = registry.read_routes()
    problems = check_routes(table, plan)
    if problems:
        raise ConflictError("; ".join(problems))
    new = [t for t in plan.topic_names() if t not in table.topics]
    for name in new:
        table = table.with_route(name, plan.source)
    if new:
        registry.write_routes(table)
        report(f"gateway: {', '.join(new)} routed to source '{plan.source}'")
    return new


def onto_gateway(
    group: str, topics: list[str], source: ClusterAdmin, target: ClusterAdmin, *, apply: bool
) -> int:
    """Copy a stopped group's source commits of ``topics`` to the group home (the
    target) unchanged; returns how many partitions. Refused while the group has members
    on either side."""
    for admin, side in ((source, "source"), (target, "gateway (target)")):
        members = len(admin.describe_group(group).members)
        if members:
            raise GroupActiveError(
                f"group {group} has {members} active member(s) on the {side}; stop its "
                "consumers, then move it"
            )
    commits = [c for c in source.committed_offsets(group) if c.topic in topics]
    if apply and commits:
        target.alter_group_offsets(
            group, [TopicPartitionOffset(c.topic, c.partition, c.committed) for c in commits]
        )
    return len(commits)


def promote(
    settings: Settings,
    registry: Registry,
    plan: Plan,
    topic: str,
    partitions: int,
    copy_last: Callable[[], None],
    report: Report,
) -> list[mover.Moved]:
    """Flip ``topic``'s partitions to the target through the gateway's fence, the
    mirror copying the last records while writes are held (``copy_last``). Already
    flipped (a resumed promote): nothing to do."""
    table = registry.read_routes()
    route = table.topics.get(topic)
    if route is not None and all(
        route.cluster_of(p) == plan.target and route.migrations.get(p) for p in range(partitions)
    ):
        return []
    # The fence pulls in the Kafka protocol library: only when a promote flips routes.
    from kmigrate.gateway.control import mover

    return mover.smooth(
        settings,
        registry,
        plan.target,
        topic,
        range(partitions),
        plan.target,
        report,
        while_fenced=copy_last,
    )


def behind(target: ClusterAdmin, table: RoutingTable, topic: str) -> list[str]:
    """Groups on the group home whose commit of ``topic`` is below a partition's
    migration offset (they still read the source there)."""
    route = table.topics.get(topic)
    if route is None:
        return []
    ends = {
        p: chain[-1].end_offset
        for p, chain in route.migrations.items()
        if chain and chain[-1].end_offset is not None
    }
    found = []
    for summary in target.list_groups():
        for c in target.committed_offsets(summary.group_id):
            end = ends.get(c.partition)
            if c.topic == topic and end is not None and c.committed < end:
                found.append(
                    f"{summary.group_id} ({topic}[{c.partition}] at {c.committed} < {end})"
                )
                break
    return found
