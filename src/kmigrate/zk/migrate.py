"""`zk migrate`: run a ZooKeeper move's phases, one guarded step at a time.

Every step first looks at the world (the ensembles' configurations, which servers
serve, each broker's zookeeper.connect) to see whether it is done already, so a move
killed at any moment resumes by running the same command again. The store records
the phase reached and each step's outcome (`zk history`).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from kmigrate.errors import (
    ClusterUnavailableError,
    ConflictError,
    KafkaOperationError,
    KMigrateError,
)
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.retry import WaitPolicy
from kmigrate.store import Store
from kmigrate.store.locks import Holder, held
from kmigrate.store.zk_moves import begin_move, record, restart_interrupted, set_phase
from kmigrate.zk.client import four_letter, server_mode, session
from kmigrate.zk.members import Member, parse_config, parse_member
from kmigrate.zk.operator import Operator
from kmigrate.zk.plan import ZkMovePlan
from kmigrate.zk.tree import digest, first_difference, read_tree

T = TypeVar("T")
PHASES = ("join", "check", "switch", "split")
SERVING = ("leader", "follower")


@dataclass
class Move:
    """One run of `zk migrate`: the plan, and what it acts through."""

    plan: ZkMovePlan
    plan_yaml: str
    store: Store
    operator: Operator
    admin: ClusterAdmin
    report: Callable[[str], None]
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

    def patiently(self, step: Callable[[], T]) -> T:
        """``step``, waiting out a cluster that blinks (a broker restarting) for up to
        ``timeout_s``: the shared wait policy."""
        return WaitPolicy(self.timeout_s).run(step)

    def done(self, phase: str, step: str, detail: str | None = None) -> None:
        record(self.store, self.plan.kafka, phase, step, "done", detail)
        self.report(f"{phase}: {step}" + (f" ({detail})" if detail else ""))


@contextmanager
def exclusively(
    store: Store, kafka: str, command: str, report: Callable[[str], None]
) -> Iterator[None]:
    """One command at a time acts on a cluster's move (a second `zk migrate` or `zk
    cleanup` refuses, naming the first); the lock of a killed one is taken over."""

    def taken_over(gone: Holder) -> None:
        detail = f"pid {gone.pid} (`kmigrate {gone.command}`) had died"
        record(store, kafka, "lock", "taken over", "done", detail)
        report(f"taking over the move's lock: {detail}")

    with held(
        store,
        f"zk-move:{kafka}",
        command,
        what=f"the ZooKeeper move of cluster '{kafka}'",
        on_takeover=taken_over,
    ):
        yield


def run_move(move: Move) -> None:
    """Run the phases not done yet; each step is skipped when the world shows it done."""
    state = begin_move(move.store, move.plan.kafka, move.plan_yaml)
    reached = PHASES.index(state.phase) + 1 if state.phase in PHASES else 0
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
    steps = {"join": join, "check": check, "switch": switch, "split": split}
    for phase in PHASES[reached:]:
        move.report(f"phase {phase}")
        try:
            steps[phase](move)
        except KMigrateError as exc:
            record(move.store, move.plan.kafka, phase, "stopped", "refused", exc.message)
            raise
        set_phase(move.store, move.plan.kafka, phase)
    set_phase(move.store, move.plan.kafka, "done")
    move.report(
        f"cluster {move.plan.kafka} now runs on ZooKeeper ensemble {move.plan.target.name}; "
        f"{move.plan.source.name} serves its other clients alone"
    )


def rollback_move(move: Move) -> None:
    """Before the split: brokers back on the source (controller last), the joined target
    servers out of the source ensemble, and the target an empty ensemble again."""
    plan = move.plan
    state = begin_move(move.store, plan.kafka, move.plan_yaml)
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
    joined = _ids_in(plan.source.connect, plan.source.name)
    if not source_ids <= joined:
        raise ConflictError(
            f"the split of cluster '{plan.kafka}''s move has begun (source servers left the "
            "joint ensemble); finish it with `kmigrate zk migrate` instead"
        )
    _same_cluster(move)
    record(move.store, plan.kafka, "rollback", "started", "done")
    _switch_brokers(move, plan.source.connect + plan.chroot, "rollback")
    if set(plan.join_first) & joined:
        _reconfig(
            move,
            plan.source.connect,
            plan.source.name,
            lambda: not set(plan.join_first) & _ids_in(plan.source.connect, plan.source.name),
            leaving=",".join(str(m.node_id) for m in first),
        )
        move.done("rollback", f"reconfig: servers {_ids(first)} left the source ensemble")
    target_ids = [m.node_id for m in move.target]
    for m in move.target:
        move.operator.stop_server(m.node_id)
    for m in move.target:
        move.operator.start_server(m.node_id, target_ids, fresh=True)
    _wait(move, lambda: all(_mode(m) in SERVING for m in move.target), "the target's quorum")
    _wait(
        move,
        functools.partial(_each_answers_for, move.target, set(target_ids), plan.target.name),
        f"every server of {plan.target.name} answering for {_ids(target_ids)} only",
    )
    move.done("rollback", f"{plan.target.name} is an empty ensemble of its own again")
    set_phase(move.store, plan.kafka, "rolled-back")
    move.report(f"cluster {plan.kafka} runs on {plan.source.name} as before; plan again to move it")


def _same_cluster(move: Move) -> None:
    """The cluster named in the plan is still the one the plan was written for."""
    planned, plan = move.plan.cluster_id, move.plan
    if not planned:
        return
    now = move.patiently(functools.partial(_cluster_id, plan.source.connect, plan))
    if now != planned:
        raise ConflictError(
            f"the plan was written for cluster id {planned}, but '{move.plan.kafka}' is "
            f"cluster {now}; plan this cluster's move with `kmigrate zk plan`"
        )


def _cluster_id(connect: str, plan: ZkMovePlan) -> str | None:
    """The id Kafka keeps in ZooKeeper (readable while every broker is down)."""
    with session(connect, plan.source.name) as zk:
        found = zk.exists(f"{plan.chroot}/cluster/id")
        if found is None:
            return None
        raw, _ = zk.get(f"{plan.chroot}/cluster/id")
    return str(json.loads(raw.decode()).get("id"))


# ---------------------------------------------------------------- join


def join(move: Move) -> None:
    plan, source = move.plan, move.source
    first = [move.target_member(i) for i in plan.join_first]
    members, version = move.patiently(lambda: _config(plan.source.connect, plan.source.name))
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
        _wait(move, lambda: all(_mode(m) == "follower" for m in first), "target servers syncing")
        move.done("join", f"servers {_ids(first)} copied the source's data as followers")
        _reconfig(
            move,
            plan.source.connect,
            plan.source.name,
            lambda: set(plan.join_first) <= _ids_in(plan.source.connect, plan.source.name),
            joining=",".join(m.line() for m in first),
            from_config=int(version or "0", 16),
        )
        move.done("join", f"reconfig: servers {_ids(first)} joined as voters")
    else:
        for m in first:
            if _mode(m) not in SERVING:
                move.operator.start_server(m.node_id, [m.node_id for m in members], fresh=False)
    everyone = [*source, *first]
    _wait(move, lambda: _same_zxid(everyone), "every server at the same last zxid")
    move.done("join", f"{len(everyone)} servers at the same last zxid")


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
            move.done(
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
    interrupted = [b for b in plan.brokers if restart_interrupted(move.store, plan.kafka, b)]
    recovered = [
        b
        for b in interrupted
        if move.operator.recover_broker(b, connect_to, registered=is_registered(move, b))
    ]
    if recovered:  # a killed run stopped them and did not start them again
        move.report(f"{phase}: broker(s) {_ids(recovered)} were down (an interrupted restart)")
        _wait(move, lambda: _healthy(move) is None, "the restarted broker(s) in sync")
    controller = move.patiently(lambda: admin.describe_cluster().controller_id)
    order = sorted(b for b in plan.brokers if b != controller)
    order += [b for b in plan.brokers if b == controller]
    where = plan.source.name if connect_to != plan.target_connect else plan.target.name
    for broker in order:
        connect = move.patiently(functools.partial(_connect_of, admin, broker))
        if connect == connect_to:
            record(move.store, plan.kafka, phase, f"broker {broker}", "skipped", "switched")
            continue
        _guard_cluster(move)
        move.report(f"{phase}: restarting broker {broker} on {where}")
        record(move.store, plan.kafka, phase, f"broker {broker}", "started", f"on {where}")
        move.operator.restart_broker(broker, connect_to)
        _wait(
            move,
            functools.partial(_switched, move, broker, connect_to),
            f"broker {broker} registered",
        )
        _wait(move, lambda: _healthy(move) is None, "no under-replicated partitions")
        move.done(phase, f"broker {broker}", f"runs on {where}")


def _connect_of(admin: ClusterAdmin, broker: int) -> str | None:
    return admin.broker_config(broker).get("zookeeper.connect")


def is_registered(move: Move, broker: int) -> bool:
    return broker in _registered(move)


def _registration_missing(move: Move) -> list[int]:
    return sorted(set(move.plan.brokers) - set(_registered(move)))


def _switched(move: Move, broker: int, connect_to: str) -> bool:
    try:
        connect = move.admin.broker_config(broker).get("zookeeper.connect")
    except KMigrateError:
        return False
    return connect == connect_to and broker in _registered(move)


def _guard_cluster(move: Move) -> None:
    problem = _healthy(move)
    if problem is not None:
        raise ConflictError(f"not restarting a broker of '{move.plan.kafka}': {problem}")


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


def _registered(move: Move) -> list[int]:
    plan = move.plan
    try:
        with session(plan.source.connect, plan.source.name) as zk:
            return sorted(int(i) for i in zk.get_children(f"{plan.chroot}/brokers/ids"))
    except KMigrateError:
        return []


# ---------------------------------------------------------------- split


def split(move: Move) -> None:
    plan = move.plan
    first = [move.target_member(i) for i in plan.join_first]
    target_connect = ",".join(m.client_address or "" for m in first)
    source_ids = [m.node_id for m in move.source]
    if set(source_ids) & _ids_in(target_connect, plan.target.name):
        _reconfig(
            move,
            target_connect,
            plan.target.name,
            lambda: not set(source_ids) & _ids_in(target_connect, plan.target.name),
            leaving=",".join(map(str, source_ids)),
        )
        move.done("split", f"reconfig: source servers {_ids(source_ids)} left the joint ensemble")
    for node_id in plan.join_after_split:
        present = _ids_in(target_connect, plan.target.name)
        if node_id in present:
            continue
        late = move.target_member(node_id)
        move.operator.start_server(node_id, [*sorted(present), node_id], fresh=True)
        _wait(move, functools.partial(_following, late), f"server {node_id} syncing")
        _reconfig(
            move,
            target_connect,
            plan.target.name,
            functools.partial(_is_member, target_connect, plan.target.name, node_id),
            joining=late.line(),
        )
        move.done("split", f"reconfig: server {node_id} joined the target ensemble")
    if _source_stands_alone(move, source_ids) is not True:
        for m in move.source:
            move.operator.stop_server(m.node_id)
        for m in move.source:
            move.operator.start_server(m.node_id, source_ids, fresh=False)
        _wait(move, lambda: all(_mode(m) in SERVING for m in move.source), "source quorum")
        move.done("split", f"servers {_ids(source_ids)} serve as an ensemble of their own")
    _verify_split(move)


def _source_stands_alone(move: Move, source_ids: list[int]) -> bool | None:
    """True when the source servers serve as their own ensemble; None when they do not
    serve (a run killed while restarting them)."""
    try:
        address = move.source[0].client_address or ""
        view, _ = WaitPolicy(15.0).run(lambda: _config(address, move.plan.source.name))
    except KMigrateError:
        return None
    return {m.node_id for m in view} == set(source_ids)


def _verify_split(move: Move) -> None:
    plan = move.plan
    for name, connect, wanted in (
        (plan.source.name, plan.source.connect, {m.node_id for m in move.source}),
        (plan.target.name, plan.target.connect, {m.node_id for m in move.target}),
    ):
        members, _ = move.patiently(functools.partial(_config, connect, name))
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
    move.done("split", "each side answers for its own servers only", f"{summary.znodes} znodes")


# ---------------------------------------------------------------- helpers


def _config(connect: str, name: str) -> tuple[tuple[Member, ...], str | None]:
    with session(connect, name) as zk:
        zk.sync("/zookeeper/config")
        raw, _ = zk.get("/zookeeper/config")
    return parse_config(raw.decode())


def _ids_in(connect: str, name: str) -> set[int]:
    """The server ids of the ensemble's current configuration (waiting out a dropped
    connection: a reconfig moves the leader)."""
    members, _ = WaitPolicy(60.0).run(lambda: _config(connect, name))
    return {m.node_id for m in members}


def _each_answers_for(members: list[Member], ids: set[int], name: str) -> bool:
    """Every one of ``members``, asked directly, shows a configuration of exactly ``ids``."""
    for m in members:
        try:
            shown, _ = _config(m.client_address or "", name)
        except KMigrateError:
            return False
        if {s.node_id for s in shown} != ids:
            return False
    return True


def _is_member(connect: str, name: str, node_id: int) -> bool:
    return node_id in _ids_in(connect, name)


def _reconfig(
    move: Move, connect: str, name: str, applied: Callable[[], bool], **change: object
) -> None:
    """One reconfiguration, once: a connection dropped during the call may hide that it
    was applied, so before every attempt the configuration is read again."""
    for _attempt in range(5):
        if applied():
            return
        try:
            with session(connect, name) as zk:
                zk.reconfig(
                    joining=change.get("joining"),
                    leaving=change.get("leaving"),
                    new_members=None,
                    from_config=change.get("from_config", -1),
                )
            return
        except ClusterUnavailableError:
            time.sleep(1.0)
    if not applied():
        raise KafkaOperationError(
            f"the reconfiguration of ZooKeeper ensemble '{name}' ({change}) did not take "
            "effect; run `kmigrate zk migrate` again"
        )


def _mode(member: Member) -> str | None:
    return server_mode(member.client_address or "")


def _following(member: Member) -> bool:
    return _mode(member) == "follower"


def _same_zxid(members: Iterable[Member]) -> bool:
    zxids = set()
    for m in members:
        text = four_letter(m.client_address or "", "srvr") or ""
        found = [line for line in text.splitlines() if line.startswith("Zxid:")]
        if not found:
            return False
        zxids.add(found[0])
    return len(zxids) == 1


def _wait(move: Move, condition: Callable[[], bool], what: str) -> None:
    started = time.monotonic()
    deadline = started + move.timeout_s
    while not condition():
        move.status(
            f"waiting for {what} ({time.monotonic() - started:.0f}s of {move.timeout_s:g}s)"
        )
        if time.monotonic() > deadline:
            raise KafkaOperationError(
                f"waited {move.timeout_s:g}s for {what}; run `kmigrate zk migrate` again to "
                "resume, or see `kmigrate zk history`"
            )
        time.sleep(0.3)


def _ids(items: Iterable[object]) -> str:
    return ",".join(str(getattr(i, "node_id", i)) for i in items)
