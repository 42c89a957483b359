"""A cluster's reassignment as kmigrate applies it, the use cases behind `reassign` and
`brokers`: plan from what the cluster holds, start a plan (or resume the one under way),
follow it, cancel it. Each takes the store and a cluster's clients opened by the caller;
the store says which plan runs and each partition's state, so any later command can
finish or undo the work (``execute`` drives the moves)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kmigrate.errors import ConflictError, NotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.model.reassignments import Applied
from kmigrate.reassign import execute, plan_file
from kmigrate.reassign.observe import read_cluster
from kmigrate.reassign.planner import (
    Goal,
    Move,
    ReassignPlan,
    partitions_matching,
    plan_reassignment,
)
from kmigrate.reassign.report import status_json
from kmigrate.store import Store
from kmigrate.store import reassignments as stored

Key = tuple[str, int]


def plan_for(admin: ClusterAdmin, kafka: Reassignments, goal: Goal) -> ReassignPlan:
    """The moves that meet ``goal`` on the cluster as it is now. Internal topics
    (__consumer_offsets, ...) are load like any other: every goal counts them, unless
    the goal's topics narrow it."""
    return plan_reassignment(read_cluster(admin, kafka, include_internal=True), goal)


def elect_preferred(admin: ClusterAdmin, kafka: Reassignments, topics: str | None) -> int:
    """Ask for the preferred leader of every partition (of ``topics``); how many."""
    model = read_cluster(admin, kafka, include_internal=bool(topics))
    keys = [p.key for p in partitions_matching(model, topics)]
    kafka.elect_preferred(keys)
    return len(keys)


def under_way(store: Store, cluster: str) -> Applied | None:
    """The cluster's reassignment kmigrate applied (running, finished or cancelled)."""
    return stored.current(store, cluster)


def running(store: Store, cluster: str) -> Applied:
    """The reassignment under way, or a NotFoundError naming the cluster."""
    found = stored.current(store, cluster)
    if found is None or found.state != "running":
        raise NotFoundError(f"cluster '{cluster}' has no reassignment under way")
    return found


def moving(store: Store, cluster: str) -> list[Key]:
    """The partitions submitted to Kafka and not finished yet."""
    return sorted(k for k, s in stored.states(store, cluster).items() if s == "moving")


@dataclass(frozen=True)
class Start:
    """What `reassign apply` was given: the plan file's text, its moves and header."""

    cluster: str
    text: str
    moves: list[Move]
    header: dict[str, Any]
    throttle: int | None  # bytes/s per broker; None: measured from the producers
    max_moves: int
    resume: bool


def resumable(store: Store, start: Start) -> Applied | None:
    """With ``resume``: the reassignment under way, which must run this very plan;
    without: None. Checked before the cluster is contacted."""
    if not start.resume:
        return None
    found = stored.current(store, start.cluster)
    if found is None or found.state != "running":
        raise NotFoundError(f"cluster '{start.cluster}' has no reassignment under way to resume")
    if found.plan_json != start.text:
        raise ConflictError("the reassignment under way was started from another plan file")
    return found


def apply(run: execute.Run, start: Start, found: Applied | None, wait: bool) -> tuple[bool, int]:
    """Submit the plan (or go on with ``found``, the one under way) and with ``wait``
    follow it to the end; (finished, throttle in bytes/s per broker)."""
    if found is not None:
        rate, max_moves = found.rate, found.max_moves
    else:
        execute.check_plan(run, start.header.get("cluster_id"))
        rate = start.throttle if start.throttle is not None else execute.measured_rate(run)
        max_moves = start.max_moves
        keys = [(m.topic, m.partition) for m in start.moves]
        stored.begin(run.store, start.cluster, start.text, keys, rate, max_moves)
        run.report(f"throttle {rate / 2**20:.1f} MiB/s per broker for the moving replicas")
    return execute.drive(run, max_moves, rate, wait), rate


def follow(
    store: Store,
    found: Applied,
    admin: ClusterAdmin,
    kafka: Reassignments,
    report: Callable[[str], None],
) -> Applied:
    """One round of the running reassignment ``found`` (a finished one is concluded:
    leaders elected, throttles removed); where it stands now."""
    _, moves = plan_file.load_text(found.plan_json)
    run = execute.Run(found.cluster, admin, kafka, store, moves, report)
    execute.drive(run, found.max_moves, found.rate, wait=False)
    now = stored.current(store, found.cluster)
    assert now is not None
    return now


def status(store: Store, found: Applied) -> dict[str, Any]:
    """Where ``found`` stands: its state and its partitions per state."""
    return status_json(store, found)


def cancel(
    store: Store,
    found: Applied,
    admin: ClusterAdmin,
    kafka: Reassignments,
    report: Callable[[str], None],
) -> list[Key]:
    """Cancel the partitions still moving (KIP-455) and remove every throttle set."""
    _, moves = plan_file.load_text(found.plan_json)
    return execute.cancel(execute.Run(found.cluster, admin, kafka, store, moves, report))
