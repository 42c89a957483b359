"""`kraft migrate | finalize | revert`: a ZooKeeper-mode cluster to KRaft (KIP-866), one
guarded step at a time, as Kafka 3.9's operations guide orders them:

1. controllers: provision and format the KRaft controllers (migration enabled);
2. roll1: restart each broker in migration mode, one at a time, each re-registered and
   no partition under-replicated before the next;
3. dual-write: wait until the controller migrated the metadata and writes both KRaft
   and ZooKeeper (`/controller` names a KRaft controller, `/migration` has an offset);
4. roll2: restart each broker as a KRaft broker;
5. finalize (its own command, the point of no return): the controllers restart without
   ZooKeeper.

Every step looks at the world first (each broker's mode from its own configuration,
the znodes), so a command killed at any moment resumes by running it again (the runbook
frame holds the lock, the phase reached and the journal). Before the
first step the cluster's metadata is read (topics, partitions, configs, ACLs, group
offsets) and after every phase it must read the same. `revert` follows the guide's
revert path from whatever phase the cluster is in, until finalization."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from kmigrate.config import ClusterConfig
from kmigrate.errors import ConflictError, KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft import sasl, snapshot
from kmigrate.kraft.operator import KRaftOperator
from kmigrate.kraft.phases import PHASES
from kmigrate.kraft.plan import ConfigChange, KRaftPlan
from kmigrate.kraft.world import DOWN, KRAFT, MIGRATING, ZK, Znodes, broker_mode_direct
from kmigrate.model.operations import KRAFT_CONVERSION
from kmigrate.runbook import guards
from kmigrate.runbook.operation import Kind, Operation, Phased

MIGRATED = "roll2"  # every broker a KRaft broker: finalize may follow
FINALIZED = "finalized"
REVERTED = "reverted"
KIND = Kind(
    KRAFT_CONVERSION,
    lock="kraft",
    title="migration to KRaft",
    busy="the migration of cluster '{cluster}' to KRaft",
    noun="migration",
    resume="run the same `kmigrate kraft` command again to resume, or see `kmigrate kraft status`",
)


kraft_conversion = KIND.of  # (store, cluster, report): as the runbook keeps it


@dataclass
class Run(Phased):
    """One `kraft` command: the plan, and what it acts through."""

    plan: KRaftPlan
    plan_yaml: str
    op: Operation  # the runbook: journal and phase reached
    operator: KRaftOperator
    admin: ClusterAdmin
    timeout_s: float = 180.0
    status: Callable[[str], None] = lambda _text: None  # what it waits for, right now
    until: str = PHASES[-1]  # migrate: the last phase to run now
    probe_as: tuple[ClusterConfig, ...] = ()  # more identities the probes ask as (plan.probe_as)
    controller_secret: str | None = None  # kraft.secret: the controller principal's, if any

    @property
    def cluster(self) -> str:
        return self.plan.kafka

    def mode(self, broker: int) -> str:
        return broker_mode_direct(self.admin.cluster, self.plan.brokers[broker], broker)

    @property
    def identities(self) -> list[ClusterConfig]:
        """Whom the authorization probes ask as: kmigrate's own principal, then the plan's."""
        return [self.admin.cluster, *self.probe_as]

    @property
    def password(self) -> str:
        """The password nodes authenticate each other with (kraft.sasl), if any: kmigrate's
        own controller principal's secret, or the SASL user's from clusters.yaml."""
        if self.plan.controller_user:
            return self.controller_secret or ""
        return self.admin.cluster.as_librdkafka().get("sasl.password", "")

    def revealed(self, config: dict[str, str]) -> dict[str, str]:
        return sasl.revealed(config, self.password)

    def znodes(self) -> Znodes:
        return self.patiently(lambda: Znodes.read(self.plan.zookeeper_connect))


# ---------------------------------------------------------------------- migrate


def run_migration(run: Run) -> None:
    """The phases not done yet, up to ``run.until`` (at most every broker a KRaft
    broker; finalizing is its own command)."""
    state = run.op.begin(run.plan_yaml)
    if state.phase in (FINALIZED, REVERTED):
        raise ConflictError(
            f"the migration of '{run.cluster}' is {state.phase}; plan again with "
            "`kmigrate kraft plan` to migrate it anew"
            if state.phase == REVERTED
            else f"cluster '{run.cluster}' is already migrated to KRaft and finalized"
        )
    if state.phase == "planned":
        _first_look(run)
    steps = {"controllers": controllers, "roll1": roll1, "dual-write": dual_write, "roll2": roll2}

    def phase_checked(phase: str) -> None:
        steps[phase](run)
        _same_metadata(run, phase)

    run.op.run_phases(PHASES, phase_checked, reached=state.phase, until=run.until)
    if run.until != PHASES[-1]:
        run.report(f"stopped after {run.until} as asked; run `kraft migrate` again to go on")
        return
    run.report(
        f"every broker of {run.cluster} is a KRaft broker; the controllers still write "
        "ZooKeeper (dual-write). Check the cluster, then `kmigrate kraft finalize PLAN` "
        "(the point of no return) or `kmigrate kraft revert PLAN`"
    )


def _first_look(run: Run) -> None:
    """The cluster still is the one planned, healthy, and its metadata is remembered."""
    found = run.znodes()
    cluster_id = found.cluster_id
    if cluster_id != run.plan.cluster_id:
        raise ConflictError(
            f"cluster '{run.cluster}' has id {cluster_id} in ZooKeeper, the plan was written "
            f"for {run.plan.cluster_id}; plan again"
        )
    problem = _health(run, ZK, MIGRATING)
    if problem is not None:
        raise ConflictError(f"not starting the migration of '{run.cluster}': {problem}")
    taken = run.patiently(lambda: snapshot.take(run.admin))
    run.op.record("check", "snapshot", "done", taken.to_json())
    run.report(f"metadata read: {taken.summary}")
    guards.remember_authorization(run, run.identities)


def _same_metadata(run: Run, phase: str) -> None:
    """The metadata reads as before the first step, and the authorizer answers every
    probe as it did. Right after a restart a group may be missing for a moment (its
    coordinator loads it), an authorizer may still be loading: ask again until it
    matches or the wait ends."""
    taken = guards.remembered(run, "snapshot", "check")
    if taken is not None:
        before = snapshot.Snapshot.from_json(taken)
        after = guards.until_same(
            run,
            lambda: snapshot.take(run.admin),
            lambda now: snapshot.differences(before, now),
            f"after {phase} the metadata of '{run.cluster}' does not read as before",
        )
        run.op.done(phase, "metadata unchanged", after.summary)
    guards.same_authorization(run, run.identities, phase)


def controllers(run: Run) -> None:
    plan = run.plan
    for node_id in plan.controller_ids:
        run.operator.start_controller(
            node_id, run.revealed(plan.controller_properties(node_id)), plan.cluster_id
        )
        run.op.done("controllers", f"controller {node_id}", "formatted and started")
    for c in plan.controllers:
        run.wait(partial(_answers, c.host, c.port), f"controller {c.node_id} on {c.host}:{c.port}")
    run.wait(lambda: run.znodes().migration is not None, "the KRaft controller's /migration znode")


def roll1(run: Run) -> None:
    _roll(run, "roll1", MIGRATING, lambda _b: run.plan.roll1, (ZK,))


def dual_write(run: Run) -> None:
    ids = set(run.plan.controller_ids)

    def migrated() -> bool:
        found = run.znodes()
        return found.controller_id in ids and found.metadata_offset >= 0

    run.wait(migrated, "the controller to migrate the metadata and write both ways (dual-write)")
    found = run.znodes()
    run.op.done(
        "dual-write",
        "metadata migrated",
        f"controller {found.controller_id}, KRaft offset {found.metadata_offset}",
    )


def roll2(run: Run) -> None:
    _roll(run, "roll2", KRAFT, run.plan.roll2_for, (MIGRATING,))


def _roll(
    run: Run,
    phase: str,
    mode: str,
    change: Callable[[int], ConfigChange],
    from_modes: tuple[str, ...],
) -> None:
    """Restart every broker not in ``mode`` yet, one at a time, each back and the
    cluster without under-replicated partitions before the next."""
    for broker in sorted(run.plan.brokers):
        _bring(run, phase, broker, mode, change(broker), from_modes, quick_stop=False)


def _bring(
    run: Run,
    phase: str,
    broker: int,
    mode: str,
    change: ConfigChange,
    from_modes: tuple[str, ...],
    *,
    quick_stop: bool,
    left_as_is: tuple[str, ...] = (),
) -> None:
    """One broker into ``mode``: nothing if it is already; restarted with ``change``
    if it is in one of ``from_modes`` (once every broker is in sync), or at once if a
    killed command was restarting it (its shutdown may still be under way: the
    restart waits for it to end). A broker
    in one of ``left_as_is`` is not touched."""
    now = run.mode(broker)
    interrupted = run.op.interrupted(f"broker {broker}")
    if now == DOWN and not interrupted:
        now = _mode_answering(run, broker)  # someone else restarts it: wait
    if now == mode or now in left_as_is:
        run.op.record(phase, f"broker {broker}", "skipped", now)
        finished = " (the interrupted restart had finished)" if interrupted else ""
        run.report(f"{phase}: broker {broker} already in {now} mode{finished}; skipped")
        return
    if now != DOWN and now not in from_modes:
        raise ConflictError(
            f"{phase}: broker {broker} of '{run.cluster}' is in {now} mode, expected "
            f"{' or '.join(from_modes)}; see `kmigrate kraft status`"
        )
    if interrupted:  # a killed command was restarting it: it may still be stopping
        run.report(f"{phase}: broker {broker}'s restart was interrupted ({now}); again")
    else:  # never two brokers out of the ISRs at once
        run.wait_clear(
            lambda: _health(run, mode, *from_modes),
            f"every broker in sync before restarting broker {broker}",
        )
    run.report(f"{phase}: restarting broker {broker} into {mode} mode")
    run.op.record(phase, f"broker {broker}", "started", mode)
    run.operator.restart_broker(broker, change.revealed(run.password), quick_stop=quick_stop)
    _back(run, broker, mode)
    run.op.done(phase, f"broker {broker}", f"{mode} mode")


def _back(run: Run, broker: int, mode: str) -> None:
    def registered() -> bool:
        if run.mode(broker) != mode:
            return False
        return mode == KRAFT or broker in run.znodes().registered

    run.wait(registered, f"broker {broker} back in {mode} mode")
    run.wait_clear(lambda: _health(run, ZK, MIGRATING, KRAFT), "no under-replicated partitions")


def _mode_answering(run: Run, broker: int) -> str:
    """The broker's mode, once it answers."""
    run.wait(lambda: run.mode(broker) != DOWN, f"broker {broker} answering")
    return run.mode(broker)


def _health(run: Run, *modes: str) -> str | None:
    """None when every broker answers in one of ``modes`` and no partition is
    under-replicated."""
    for broker in sorted(run.plan.brokers):
        mode = run.mode(broker)
        if mode not in modes:
            return (
                f"broker {broker} is {mode}" if mode == DOWN else f"broker {broker} in {mode} mode"
            )
    try:
        topics = run.admin.list_topics(include_internal=True)
    except KMigrateError as exc:
        return exc.message
    under = [f"{t.name}[{p.partition}]" for t in topics for p in t.partitions if p.under_replicated]
    return f"{len(under)} under-replicated partition(s), e.g. {under[0]}" if under else None


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------- finalize


def finalize(run: Run) -> None:
    """The controllers restart without ZooKeeper: KRaft for good (no revert after)."""
    state = run.op.begin(run.plan_yaml)
    if state.phase == FINALIZED:
        run.report(f"cluster {run.cluster} is already finalized")
        return
    if state.phase not in (MIGRATED, "finalize"):
        raise ConflictError(
            f"cannot finalize '{run.cluster}': the migration is at phase {state.phase}; "
            "every broker must be a KRaft broker first (`kmigrate kraft migrate PLAN`)"
        )
    problem = _health(run, KRAFT)
    if problem is not None:
        raise ConflictError(f"not finalizing '{run.cluster}': {problem}")
    if state.phase == MIGRATED:  # who may do what as before, while a revert still can
        try:
            _same_metadata(run, MIGRATED)
        except ConflictError as exc:
            raise ConflictError(
                f"not finalizing: {exc.message}; `kmigrate kraft revert PLAN` is still possible"
            ) from exc
    run.op.set_phase("finalize")
    plan = run.plan
    for c in plan.controllers:
        run.report(f"finalize: restarting controller {c.node_id} without ZooKeeper")
        run.operator.start_controller(
            c.node_id,
            run.revealed(plan.controller_properties(c.node_id, finalized=True)),
            plan.cluster_id,
        )
        run.wait(partial(_answers, c.host, c.port), f"controller {c.node_id} back")
        run.wait_clear(
            lambda: _health(run, KRAFT), "every broker serving, nothing under-replicated"
        )
        run.op.done("finalize", f"controller {c.node_id}", "KRaft only")
    _same_metadata(run, "finalize")
    run.op.set_phase(FINALIZED)
    run.report(f"cluster {run.cluster} runs on KRaft; ZooKeeper is no longer used or written")


# ---------------------------------------------------------------------- revert


def revert(run: Run) -> None:
    """Back to ZooKeeper mode from any phase before finalization (the guide's revert):
    KRaft brokers back into migration mode; the controllers deprovisioned; `/controller`
    and `/migration` deleted so a broker becomes the controller again; every broker
    restarted without the migration settings."""
    state = run.op.begin(run.plan_yaml)
    if state.phase in (FINALIZED, "finalize"):
        raise ConflictError(
            f"cluster '{run.cluster}' was finalized: KRaft is for good, there is no way back "
            "to ZooKeeper (Kafka's guide)"
        )
    if state.phase == REVERTED:
        run.report(f"cluster {run.cluster} is already back in ZooKeeper mode")
        return
    run.op.record("revert", "started", "done", f"from phase {state.phase}")
    plan = run.plan
    for broker in sorted(plan.brokers):
        change = plan.revert_roll2_for(broker)
        _bring(
            run, "revert", broker, MIGRATING, change, (KRAFT,), quick_stop=False, left_as_is=(ZK,)
        )
    for node_id in plan.controller_ids:
        run.operator.stop_controller(node_id, wipe=True)
        run.op.done("revert", f"controller {node_id}", "deprovisioned")
    found = run.znodes()
    if found.controller_id in set(plan.controller_ids):
        lifted = run.patiently(lambda: Znodes.lift_controller_epoch(plan.zookeeper_connect))
        if lifted is not None:
            run.op.done("revert", "controller epoch", "/controller_epoch {} -> {}: the next "
                        "controller's epoch exceeds the KRaft controller's (KAFKA-20488)"
                        .format(*lifted))  # fmt: skip
    if found.controller_id in set(plan.controller_ids) or found.migration is not None:
        run.patiently(lambda: Znodes.clear(plan.zookeeper_connect))
        run.op.done("revert", "znodes", "/controller and /migration deleted")
    for broker in sorted(plan.brokers):
        # its controlled shutdown would wait for the controllers just deprovisioned
        _bring(run, "revert", broker, ZK, plan.revert_roll1(), (MIGRATING,), quick_stop=True)
    run.wait(lambda: run.znodes().controller_id in plan.brokers, "a broker elected controller")
    run.wait_clear(lambda: _health(run, ZK), "every broker in ZooKeeper mode, in sync")
    _same_metadata(run, "revert")
    run.op.set_phase(REVERTED)
    run.report(f"cluster {run.cluster} runs in ZooKeeper mode as before")
