"""The gateway's commands as use cases: what `kmigrate gateway route | shield | migrate |
status | migrations` does, callable by `kmigrate serve` too. Each checks its input, then
the clusters, then changes the routing table with a compare-and-set; changes that move
or shield something go to the metadata store's audit log.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError, KMigrateError, NotFoundError
from kmigrate.gateway.control import mover
from kmigrate.gateway.control.aging import Audit
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.report import migrations_json
from kmigrate.gateway.control.routes import RoutingTable, TopicRoute
from kmigrate.gateway.control.shared_state import Setup, setup_of
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.store import store_for
from kmigrate.store.migrations import record_event

AUDIT = "gateway"  # the audit log's name for the gateway's changes
# How long `shield` and `unshield` wait for every live instance to serve the new table
# (ZooKeeper's notification time; an instance killed -9 is listed until its session ends).
APPLIED_S = 15.0


def auditor(settings: Settings) -> Audit:
    """The aging timer's changes into the metadata store's audit log, best effort (an
    instance keeps serving when the store is away; its log has every change too)."""

    def audit(action: str, subjects: list[str], detail: str) -> None:
        try:
            record_event(store_for(settings), AUDIT, action, subjects, "done", detail)
        except Exception as exc:
            logging.getLogger("kmigrate.gateway").info("audit log not written: %s", exc)

    return audit


def wait_registered(
    setup: Setup, node_id: int, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 60
) -> None:
    """Return once the detached instance ``proc`` registered as ``node_id``; refused
    when it exited, and ended when it did not register within ``timeout_s``."""
    registry = setup.registry()
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last = log.read_text().strip().splitlines()[-1:] or ["no output"]
                raise ConflictError(f"the gateway instance exited: {last[0]} (log: {log})")
            if any(i.node_id == node_id for i in registry.instances()):
                return
            time.sleep(0.2)
    finally:
        registry.close()
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    raise ConflictError(f"the gateway instance did not register within 60s (log: {log})")


# ---------------------------------------------------------------- reading


def status(setup: Setup) -> tuple[list[Instance], RoutingTable]:
    """The live instances and the routing table."""
    registry = setup.registry()
    try:
        return registry.instances(), registry.read_routes()
    finally:
        registry.close()


def status_json(instances: Sequence[Instance], table: RoutingTable) -> dict[str, Any]:
    """What `gateway status --json` prints."""
    return {
        "instances": [{"id": i.node_id, "host": i.host, "port": i.port} for i in instances],
        "routes": {
            t: {"cluster": r.cluster, "partitions": {str(p): c for p, c in r.partitions.items()}}
            for t, r in sorted(table.topics.items())
        },
        "routes_version": table.version,
        "default_route": table.default,
    }


def migrations(settings: Settings, setup: Setup) -> dict[str, Any]:
    """Every partition move's record and where its offsets are served from
    (kmigrate.gateway.control.report)."""
    registry = setup.registry()
    try:
        table = registry.read_routes()
    finally:
        registry.close()
    return migrations_json(settings, table)


# ---------------------------------------------------------------- routes


@dataclass(frozen=True)
class Routed:
    """A route set: the new table's version, and whether the group home got the topic."""

    topic: str
    cluster: str
    partitions: list[int] | None
    count: int  # the topic's partitions on ``cluster``
    routes_version: int
    created_on_group_home: bool


def route(
    settings: Settings, setup: Setup, topic: str, cluster: str, partitions: list[int] | None
) -> Routed:
    """Route ``topic`` (or only its ``partitions``) to ``cluster``. The topic must exist
    there, and on the group home (committed offsets live there; created if missing)."""
    with ClusterAdmin(settings.cluster(cluster)) as admin:
        count = len(admin.describe_topic(topic).partitions)
    bad = [p for p in partitions or [] if p >= count]
    if bad:
        raise ConfigError(
            f"topic '{topic}' has {count} partition(s) on {cluster}; no partition {bad[0]}"
        )
    created = offsets_home(settings, setup, topic, count)
    registry = setup.registry()
    try:
        table = registry.read_routes()
        new = registry.write_routes(table.with_route(topic, cluster, partitions))
    finally:
        registry.close()
    return Routed(topic, cluster, partitions, count, new.version, created)


def offsets_home(settings: Settings, setup: Setup, topic: str, count: int) -> bool:
    """Kafka keeps committed offsets only for partitions it has: the topic must exist on
    the group home. True if it had to be created."""
    home_name = setup.home()
    with ClusterAdmin(settings.cluster(home_name)) as home:
        found = home.describe_topics_if_present([topic])
        if found:
            if len(found[0].partitions) != count:
                raise ConflictError(
                    f"topic '{topic}' has {len(found[0].partitions)} partition(s) on the group "
                    f"home {home_name} and {count} where it is routed; make them equal"
                )
            return False
        home.create_topic(topic, count)
        return True


def route_of(setup: Setup, topic: str) -> TopicRoute:
    """``topic``'s route, or NotFoundError when the table has none (what `gateway route
    delete` shows before it asks)."""
    registry = setup.registry()
    try:
        route = registry.read_routes().topics.get(topic)
    finally:
        registry.close()
    if route is None:
        raise NotFoundError(f"topic '{topic}' has no route in the gateway's routing table")
    return route


def unroute(setup: Setup, topic: str) -> RoutingTable:
    """The table without ``topic`` (clients stop seeing it)."""
    registry = setup.registry()
    try:
        return registry.write_routes(registry.read_routes().without(topic))
    finally:
        registry.close()


def set_default(settings: Settings, setup: Setup, cluster: str | None) -> RoutingTable:
    """The table with ``cluster`` as the default route (where topics clients create
    through the gateway are made and routed); None clears it (CreateTopics refused)."""
    if cluster is not None:
        settings.cluster(cluster)  # a name clusters.yaml knows
    registry = setup.registry()
    try:
        return registry.change_routes(lambda table: table.with_default(cluster))
    finally:
        registry.close()


@dataclass(frozen=True)
class Shielded:
    """A shield or unshield written: the new table, and the live instances that did not
    say they serve it within APPLIED_S (none: every one does)."""

    table: RoutingTable
    pending: list[int]


def shield(settings: Settings, routes: str | None, cluster: str, on: bool) -> Shielded | None:
    """Stop (``on``) or resume sending requests to ``cluster``, then wait until every
    live instance serves the new table; None when it already was so. ``routes``: a
    --routes address, else clusters.yaml's gateway."""
    settings.cluster(cluster)  # a name clusters.yaml knows
    registry = setup_of(settings, routes).registry()
    try:
        table = registry.read_routes()
        if (cluster in table.shielded) == on:
            return None
        new = registry.write_routes(table.with_shield(cluster, on))
        action = "gateway shield" if on else "gateway unshield"
        record_event(store_for(settings), AUDIT, action, [cluster], "done", None)
        return Shielded(new, registry.wait_applied(new.version, APPLIED_S))
    finally:
        registry.close()


# ---------------------------------------------------------------- partition moves


@dataclass(frozen=True)
class MoveRequest:
    """What `gateway migrate` asks: partitions of a topic to a cluster, and how."""

    topic: str
    partitions: list[int]
    target: str
    mode: str  # "smooth" or "failover" (kmigrate.gateway.control.partition_moves.Mode)
    ignore_origin: bool = False
    keep_origin: bool = False
    fence_timeout_s: float = mover.FENCE_TIMEOUT_S


def move(
    settings: Settings, setup: Setup, asked: MoveRequest, progress: mover.Progress
) -> list[mover.Moved]:
    """Move the partitions (kmigrate.gateway.control.mover); the outcome, done or
    refused, goes to the audit log."""
    home = setup.home()
    store = store_for(settings)
    registry = setup.registry()
    subjects = [f"{asked.topic}[{p}]" for p in asked.partitions]
    try:
        if asked.mode == "failover":
            moved = mover.failover(
                settings, registry, home, asked.topic, asked.partitions, asked.target,
                asked.ignore_origin, asked.keep_origin, progress,
            )  # fmt: skip
        else:
            moved = mover.smooth(
                settings, registry, home, asked.topic, asked.partitions, asked.target,
                progress, asked.fence_timeout_s, asked.keep_origin, asked.ignore_origin,
            )  # fmt: skip
    except KMigrateError as exc:
        record_event(store, AUDIT, "gateway migrate", subjects, "refused", str(exc))
        raise
    finally:
        registry.close()
    detail = "; ".join(
        f"{m.topic}[{m.partition}] {m.origin}->{m.target} end_offset {m.end_offset} epoch {m.epoch}"
        for m in moved
    )
    record_event(store, AUDIT, "gateway migrate", subjects, "done", detail)
    return moved
