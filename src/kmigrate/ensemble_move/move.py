"""`zk migrate`: run an ensemble move's phases, one guarded step at a time.

Every step first looks at the world (the ensembles' configurations, which servers
serve, each broker's zookeeper.connect) to see whether it is done already, so a move
killed at any moment resumes by running the same command again. The runbook frame
holds the lock and records the phase reached and each step's outcome (`zk history`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kmigrate.ensemble_move.members import Member, parse_member
from kmigrate.ensemble_move.operator import Operator
from kmigrate.ensemble_move.plan import ZkMovePlan
from kmigrate.ensemble_move.world import (
    cluster_id,
    dynamic_members,
    each_answers_for,
    ids_in,
    is_member,
    registered_brokers,
)
from kmigrate.errors import ConflictError, KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.operations import ENSEMBLE_MOVE
from kmigrate.runbook import guards
from kmigrate.runbook.operation import Kind, Operation, Phased
from kmigrate.waiting import WaitPolicy
from kmigrate.zookeeper import reconfig
from kmigrate.zookeeper.tree import digest, first_difference, read_tree
from kmigrate.zookeeper.words import last_zxid, server_mode

PHASES = ("join", "check", "switch", "split")
SERVING = ("leader", "follower")
AGAIN = "`kmigrate zk migrate`"
KIND = Kind(
    ENSEMBLE_MOVE,
    lock="zk-move",
    title="ZooKeeper move",
    busy="the ZooKeeper move of cluster '{cluster}'",
    noun="move",
    resume=f"run {AGAIN} again to resume, or see `kmigrate zk history`",
)


ensemble_move = KIND.of  # (store, kafka, report): the cluster's move, as the runbook keeps it


@dataclass
class Move(Phased):
    """One run of `zk migrate`: the plan, and what it acts through."""

    plan: ZkMovePlan
    plan_yaml: str
    op: Operation  # the runbook: journal and phase reached
    operator: Operator
    admin: ClusterAdmin
    timeout_s: float = 120.0
    status: Callable[[str], None] = lambda _text: None  # what it waits for, right now

    @property
    def source(self) -> list[Member]:
        return [parse_member(line) for line in self.plan.source.members]

    @property
    def target(self) -> list[Member]:
        return [parse_member(line) for line in self.plan.target.members]

    def target_member(self, node_id: int) -> Member:
        return next(m for m in self.target if m.node_id == node_id)

    def registered(self) -> list[int]:
        """The brokers registered on the source ensemble (none when it does not answer)."""
        return registered_brokers(self.plan.source.connect, self.plan.source.name, self.plan.chroot)


def run_move(move: Move) -> None:
    """Run the phases not done yet; each step is skipped when the world shows it done."""
    state = move.op.begin(move.plan_yaml)
    if state.phase == "done":
        move.report(f"the ZooKeeper move of cluster {move.plan.kafka} is already done")
        return
    if state.phase == "rolled-back":
        raise ConflictError(
            f"this plan's move of cluster '{move.plan.kafka}' was rolled back; write a new "
            "plan with `kmigrate zk plan`"
        )
    _same_cluster(move)
    if state.phase == "planned":
        problem = _healthy(move)
        if problem is not None:
            raise ConflictError(f"not starting the move of '{move.plan.kafka}': {problem}")
        guards.remember_authorization(move, [move.admin.cluster])
    steps = {"join": join, "check": check, "switch": switch, "split": split}

    def guarded(phase: str) -> None:
        steps[phase](move)
        # the brokers' AclAuthorizer reads the ACLs from the ensemble they run on now
        guards.same_authorization(move, [move.admin.cluster], phase)

    move.op.run_phases(PHASES, guarded, reached=state.phase)
    move.op.set_phase("done")
    move.report(
        f"cluster {move.plan.kafka} now runs on ZooKeeper ensemble {move.plan.target.name}; "
        f"{move.plan.source.name} serves its other clients alone"
    )


def rollback_move(move: Move) -> None:
    """Before the split: brokers back on the source (controller last), the joined target
    servers out of the source ensemble, and the target an empty ensemble again."""
    plan = move.plan
    state = move.op.begin(move.plan_yaml)
    if state.phase in ("split", "done"):
        raise ConflictError(
            f"the move of cluster '{plan.kafka}' is past the split; there is nothing to roll "
            "back to (the source ensemble serves its other clients alone)"
        )
    if state.phase == "rolled-back":
        move.report(f"the ZooKeeper move of cluster {plan.kafka} is already rolled back")
        return
    first = [move.target_member(i) for i in plan.join_first]
    source_ids = {m.node_id for m in move.source}
    joined = ids_in(plan.source.connect, plan.source.name)
    if not source_ids <= joined:
        raise ConflictError(
            f"the split of cluster '{plan.kafka}''s move has begun (source servers left the "
            "joint ensemble); finish it with `kmigrate zk migrate` instead"
        )
    _same_cluster(move)
    move.op.record("rollback", "started", "done")
    _switch_brokers(move, plan.source.connect + plan.chroot, "rollback")
    if set(plan.join_first) & joined:
        reconfig.reconfig(
            plan.source.connect,
            plan.source.name,
            lambda: not set(plan.join_first) & ids_in(plan.source.connect, plan.source.name),
            AGAIN,
            leaving=",".join(str(m.node_id) for m in first),
        )
        move.op.done("rollback", f"reconfig: servers {_ids(first)} left the source ensemble")
    target_ids = [m.node_id for m in move.target]
    for m in move.target:
        move.operator.stop_server(m.node_id)
    for m in move.target:
        move.operator.start_server(m.node_id, target_ids, fresh=True)
    move.wait(lambda: all(_mode(m) in SERVING for m in move.target), "the target's quorum")
    move.wait(
        functools.partial(each_answers_for, move.target, set(target_ids), plan.target.name),
        f"every server of {plan.target.name} answering for {_ids(target_ids)} only",
    )
    move.op.done("rollback", f"{plan.target.name} is an empty ensemble of its own again")
    move.op.set_phase("rolled-back")
    move.report(f"cluster {plan.kafka} runs on {plan.source.name} as before; plan again to move it")


def _same_cluster(move: Move) -> None:
    """The cluster named in the plan is still the one the plan was written for."""
    planned, plan = move.plan.cluster_id, move.plan
    if not planned:
        return
    now = move.patiently(
        functools.partial(cluster_id, plan.source.connect, plan.source.name, plan.chroot)
    )
    if now != planned:
        raise ConflictError(
            f"the plan was written for cluster id {planned}, but '{move.plan.kafka}' is "
            f"cluster {now}; plan this cluster's move with `kmigrate zk plan`"
        )


# ---------------------------------------------------------------- join


def join(move: Move) -> None:
    plan, source = move.plan, move.source
    first = [move.target_member(i) for i in plan.join_first]
    members, version = move.patiently(
        lambda: dynamic_members(plan.source.connect, plan.source.name)
    )
    if not set(plan.join_first) <= {m.node_id for m in members}:
        if version != plan.source.config_version:
            raise ConflictError(
                f"source ensemble '{plan.source.name}' was reconfigured since the plan "
                f"(config version {version}, planned {plan.source.config_version}); plan again"
            )
        for m in move.target:  # the (empty) target ensemble stops; its data is replaced
            move.operator.stop_server(m.node_id)
        for m in first:
            move.operator.start_server(
                m.node_id, [*(s.node_id for s in source), m.node_id], fresh=True
            )
        move.wait(lambda: all(_mode(m) == "follower" for m in first), "target servers syncing")
        move.op.done("join", f"servers {_ids(first)} copied the source's data as followers")
        reconfig.reconfig(
            plan.source.connect,
            plan.source.name,
            lambda: set(plan.join_first) <= ids_in(plan.source.connect, plan.source.name),
            AGAIN,
            joining=",".join(m.line() for m in first),
            from_config=int(version or "0", 16),
        )
        move.op.done("join", f"reconfig: servers {_ids(first)} joined as voters")
    else:
        for m in first:
            if _mode(m) not in SERVING:
                move.operator.start_server(m.node_id, [m.node_id for m in members], fresh=False)
    everyone = [*source, *first]
    move.wait(lambda: _same_zxid(everyone), "every server at the same last zxid")
    move.op.done("join", f"{len(everyone)} servers at the same last zxid")


# ---------------------------------------------------------------- check


def check(move: Move) -> None:
    plan = move.plan
    root = plan.chroot or "/"
    left_addr = move.source[0].client_address or ""
    right_addr = move.target_member(plan.join_first[0]).client_address or ""
    for _attempt in range(5):
        left = move.patiently(functools.partial(read_tree, left_addr, root, plan.source.name))
        right = move.patiently(functools.partial(read_tree, right_addr, root, plan.target.name))
        difference = first_difference(left, right)
        if difference is None:
            summary = digest(root, left)
            move.op.done(
                "check",
                f"Kafka's tree under {root} is identical on servers {move.source[0].node_id} "
                f"and {plan.join_first[0]}",
                f"{summary.znodes} znodes, digest {summary.digest}",
            )
            return
        time.sleep(1.0)  # Kafka wrote between the two reads; read both again
    raise ConflictError(
        f"Kafka's tree differs between servers {move.source[0].node_id} and "
        f"{plan.join_first[0]} at {difference}; nothing was switched"
    )


# ---------------------------------------------------------------- switch


def switch(move: Move) -> None:
    _switch_brokers(move, move.plan.target_connect, "switch")


def _switch_brokers(move: Move, connect_to: str, phase: str) -> None:
    """Restart every broker not on ``connect_to`` yet, one at a time, the controller last."""
    plan, admin = move.plan, move.admin
    interrupted = [b for b in plan.brokers if move.op.interrupted(f"broker {b}")]
    recovered = [
        b
        for b in interrupted
        if move.operator.recover_broker(b, connect_to, registered=is_registered(move, b))
    ]
    if recovered:  # a killed run stopped them and did not start them again
        move.report(f"{phase}: broker(s) {_ids(recovered)} were down (an interrupted restart)")
        move.wait_clear(lambda: _healthy(move), "the restarted broker(s) in sync")
    controller = move.patiently(lambda: admin.describe_cluster().controller_id)
    order = sorted(b for b in plan.brokers if b != controller)
    order += [b for b in plan.brokers if b == controller]
    where = plan.source.name if connect_to != plan.target_connect else plan.target.name
    for broker in order:
        connect = move.patiently(functools.partial(_connect_of, admin, broker))
        if connect == connect_to:
            move.op.record(phase, f"broker {broker}", "skipped", "switched")
            continue
        # a resumed run may find the cluster still catching up after a killed run's restart
        move.wait_clear(
            lambda: _healthy(move), f"every broker in sync before restarting broker {broker}"
        )
        move.report(f"{phase}: restarting broker {broker} on {where}")
        move.op.record(phase, f"broker {broker}", "started", f"on {where}")
        move.operator.restart_broker(broker, connect_to)
        move.wait(
            functools.partial(_switched, move, broker, connect_to),
            f"broker {broker} registered",
        )
        move.wait_clear(lambda: _healthy(move), "no under-replicated partitions")
        move.op.done(phase, f"broker {broker}", f"runs on {where}")


def _connect_of(admin: ClusterAdmin, broker: int) -> str | None:
    return admin.broker_config(broker).get("zookeeper.connect")


def is_registered(move: Move, broker: int) -> bool:
    return broker in move.registered()


def _registration_missing(move: Move) -> list[int]:
    return sorted(set(move.plan.brokers) - set(move.registered()))


def _switched(move: Move, broker: int, connect_to: str) -> bool:
    try:
        connect = move.admin.broker_config(broker).get("zookeeper.connect")
    except KMigrateError:
        return False
    return connect == connect_to and broker in move.registered()


def _healthy(move: Move) -> str | None:
    """None when every broker is registered and no partition is under-replicated."""
    missing = _registration_missing(move)
    if missing:
        return f"broker(s) {_ids(missing)} not registered"
    try:
        topics = move.admin.list_topics(include_internal=True)
    except KMigrateError as exc:
        return exc.message
    under = [
        f"{t.name}[{p.partition}]"
        for t in topics
        for p in t.partitions
        if len(p.isr) < len(p.replicas)
    ]
    return f"{len(under)} under-replicated partition(s), e.g. {under[0]}" if under else None


# ---------------------------------------------------------------- split


def split(move: Move) -> None:
    plan = move.plan
    first = [move.target_member(i) for i in plan.join_first]
    target_connect = ",".join(m.client_address or "" for m in first)
    source_ids = [m.node_id for m in move.source]
    if set(source_ids) & ids_in(target_connect, plan.target.name):
        reconfig.reconfig(
            target_connect,
            plan.target.name,
            lambda: not set(source_ids) & ids_in(target_connect, plan.target.name),
            AGAIN,
            leaving=",".join(map(str, source_ids)),
        )
        move.op.done(
            "split", f"reconfig: source servers {_ids(source_ids)} left the joint ensemble"
        )
    for node_id in plan.join_after_split:
        present = ids_in(target_connect, plan.target.name)
        if node_id in present:
            continue
        late = move.target_member(node_id)
        move.operator.start_server(node_id, [*sorted(present), node_id], fresh=True)
        move.wait(functools.partial(_following, late), f"server {node_id} syncing")
        reconfig.reconfig(
            target_connect,
            plan.target.name,
            functools.partial(is_member, target_connect, plan.target.name, node_id),
            AGAIN,
            joining=late.line(),
        )
        move.op.done("split", f"reconfig: server {node_id} joined the target ensemble")
    if _source_stands_alone(move, source_ids) is not True:
        for m in move.source:
            move.operator.stop_server(m.node_id)
        for m in move.source:
            move.operator.start_server(m.node_id, source_ids, fresh=False)
        move.wait(lambda: all(_mode(m) in SERVING for m in move.source), "source quorum")
        move.op.done("split", f"servers {_ids(source_ids)} serve as an ensemble of their own")
    _verify_split(move)


def _source_stands_alone(move: Move, source_ids: list[int]) -> bool | None:
    """True when the source servers serve as their own ensemble; None when they do not
    serve (a run killed while restarting them)."""
    try:
        address = move.source[0].client_address or ""
        view, _ = WaitPolicy(15.0).run(lambda: dynamic_members(address, move.plan.source.name))
    except KMigrateError:
        return None
    return {m.node_id for m in view} == set(source_ids)


def _verify_split(move: Move) -> None:
    plan = move.plan
    for name, connect, wanted in (
        (plan.source.name, plan.source.connect, {m.node_id for m in move.source}),
        (plan.target.name, plan.target.connect, {m.node_id for m in move.target}),
    ):
        members, _ = move.patiently(functools.partial(dynamic_members, connect, name))
        if {m.node_id for m in members} != wanted:
            raise ConflictError(
                f"after the split, ensemble '{name}' answers for servers "
                f"{_ids(sorted(m.node_id for m in members))}, expected {_ids(sorted(wanted))}"
            )
    addresses = [m.client_address or "" for m in move.target]
    trees = [
        move.patiently(functools.partial(read_tree, a, plan.chroot or "/", plan.target.name))
        for a in addresses[:2]
    ]
    if first_difference(trees[0], trees[1]) is not None:
        raise ConflictError(f"Kafka's tree differs between two servers of {plan.target.name}")
    summary = digest(plan.chroot or "/", trees[0])
    move.op.done("split", "each side answers for its own servers only", f"{summary.znodes} znodes")


# ---------------------------------------------------------------- helpers


def _mode(member: Member) -> str | None:
    return server_mode(member.client_address or "")


def _following(member: Member) -> bool:
    return _mode(member) == "follower"


def _same_zxid(members: Iterable[Member]) -> bool:
    zxids = set()
    for m in members:
        zxid = last_zxid(m.client_address or "")
        if zxid is None:
            return False
        zxids.add(zxid)
    return len(zxids) == 1


def _ids(items: Iterable[object]) -> str:
    return ",".join(str(getattr(i, "node_id", i)) for i in items)
