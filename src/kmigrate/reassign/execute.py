"""Applying a reassignment plan: at most N partitions in flight through KIP-455, the
replication throttles set for the moving replicas only, progress while it copies, the
preferred leaders elected at the end, and every throttle it set removed, whether the
move ends, is cancelled, or is resumed after a kill.

The store knows each partition's state and which topics and brokers got throttles
(written before they are set), so any later run can finish or undo the work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kmigrate.errors import ConflictError, KafkaOperationError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.reassign.planner import Move
from kmigrate.reassign.throttles import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    auto_rate,
    throttles_for,
)
from kmigrate.store import Store
from kmigrate.store import reassignments as stored

Key = tuple[str, int]
POLL_S = 1.0


@dataclass
class Run:
    cluster: str
    admin: ClusterAdmin
    kafka: Reassignments
    store: Store
    moves: list[Move]
    report: Callable[[str], None]
    progress: Callable[[str], None] = lambda _text: None
    # runs one round of the loop, waiting out a cluster that stops answering
    patiently: Callable[[Callable[[], bool | None]], bool | None] = lambda step: step()
    rate_since: tuple[float, int] | None = None  # (when, MiB copied then) for the ETA

    @property
    def by_key(self) -> dict[Key, Move]:
        return {(m.topic, m.partition): m for m in self.moves}


# ---------------------------------------------------------------- guards


def check_plan(run: Run, cluster_id: str | None) -> None:
    """Refusals before anything changes."""
    info = run.admin.describe_cluster()
    if cluster_id and info.cluster_id != cluster_id:
        raise ConflictError(
            f"the plan was made for cluster id {cluster_id}, but '{run.cluster}' is "
            f"{info.cluster_id}; plan again for this cluster"
        )
    live = {b.node_id for b in info.brokers}
    for m in run.moves:
        unknown = [b for b in m.after if b not in live]
        if unknown:
            raise ConflictError(
                f"the plan puts {m.topic}[{m.partition}] on broker(s) "
                f"{','.join(map(str, unknown))}, which are not live in '{run.cluster}'"
            )
    busy = set(run.kafka.ongoing()) & set(run.by_key)
    if busy:
        topic, partition = sorted(busy)[0]
        raise ConflictError(
            f"{topic}[{partition}] is already being reassigned"
            + (f" (and {len(busy) - 1} more)" if len(busy) > 1 else "")
            + "; wait for it or cancel it first"
        )
    configs = run.admin.topic_configs(sorted({m.topic for m in run.moves}))
    for topic in sorted({m.topic for m in run.moves}):
        min_isr = int(configs.get(topic, {}).get("min.insync.replicas", "1"))
        for m in (m for m in run.moves if m.topic == topic):
            if len(m.after) < min_isr:
                raise ConflictError(
                    f"{topic}[{m.partition}] would keep {len(m.after)} replica(s), fewer than "
                    f"its min.insync.replicas {min_isr}; producers with acks=all would stop"
                )


def measured_rate(run: Run, sample_s: float = 3.0) -> int:
    """``auto``: what producers write into the moving partitions, measured from their
    sizes on disk over ``sample_s``, times the headroom."""
    keys = set(run.by_key)

    def total() -> int:
        sizes = run.kafka.replica_sizes(_live(run))
        best: dict[Key, int] = {}
        for (topic, partition, _), size in sizes.items():
            if (topic, partition) in keys:
                best[(topic, partition)] = max(best.get((topic, partition), 0), size)
        return sum(best.values())

    first = total()
    time.sleep(sample_s)
    return auto_rate(max(0, total() - first) / sample_s)


# ---------------------------------------------------------------- the loop


def drive(run: Run, max_moves: int, rate: int, wait: bool) -> bool:
    """Submit and follow the plan; True when every partition is done (then leaders
    elected and throttles removed). Each round goes through ``run.patiently``, which
    waits out a cluster that stops answering: a round can be repeated whole."""
    while True:
        outcome = run.patiently(lambda: _round(run, max_moves, rate, wait))
        if outcome is not None:
            return outcome
        time.sleep(POLL_S)


def _round(run: Run, max_moves: int, rate: int, wait: bool) -> bool | None:
    """Finished partitions marked done and the room they left filled; True when all
    are done (concluded), False when not following, None: look again later."""
    while True:
        states = stored.states(run.store, run.cluster)
        moving = [k for k, s in states.items() if s == "moving"]
        finished = _finished(run, moving)
        if finished:
            stored.set_states(run.store, run.cluster, finished, "done")
            moving = [k for k in moving if k not in finished]
        pending = sorted(
            k for k, s in stored.states(run.store, run.cluster).items() if s == "pending"
        )
        room = max_moves - len(moving) if wait else len(pending)
        if pending and room > 0:
            _start(run, pending[:room], rate)
            continue
        done = [k for k, s in stored.states(run.store, run.cluster).items() if s == "done"]
        run.progress(
            f"{len(done)}/{len(states)} partitions moved, {len(moving)} moving"
            + _copied(run, moving, done)
        )
        if not moving and not pending:
            conclude(run, "done")
            return True
        return None if wait else False


def _start(run: Run, keys: list[Key], rate: int) -> None:
    moves = [run.by_key[k] for k in keys]
    throttles = throttles_for(moves, rate)
    live = set(_live(run))  # a dead broker (fix-offline) takes no config change
    throttles = replace(
        throttles, brokers={b: r for b, r in throttles.brokers.items() if b in live}
    )
    stored.add_throttled(run.store, run.cluster, throttles.topics, throttles.brokers)
    for topic, lists in throttles.topics.items():
        current = run.admin.dynamic_configs("topic", topic)
        merged = {key: _union(current.get(key), value) for key, value in lists.items()}
        run.admin.set_configs("topic", topic, merged)
    for broker, value in throttles.brokers.items():
        run.admin.set_configs(
            "broker", str(broker), {LEADER_RATE: str(value), FOLLOWER_RATE: str(value)}
        )
    run.kafka.submit({k: run.by_key[k].after for k in keys})
    stored.set_states(run.store, run.cluster, keys, "moving")
    run.report(
        f"moving {len(keys)} partition(s): "
        + ", ".join(f"{t}[{p}]" for t, p in keys[:5])
        + (" ..." if len(keys) > 5 else "")
    )


def _union(current: str | None, added: str) -> str:
    parts = [p for p in (current or "").split(",") if p] + [p for p in added.split(",") if p]
    return ",".join(sorted(set(parts)))


def _finished(run: Run, moving: list[Key]) -> list[Key]:
    if not moving:
        return []
    ongoing = run.kafka.ongoing()
    topics = {
        t.name: t for t in run.admin.describe_topics_if_present(sorted({t for t, _ in moving}))
    }
    done = []
    for key in moving:
        if key in ongoing:
            continue
        topic = topics.get(key[0])
        replicas = next(
            (tuple(p.replicas) for p in topic.partitions if p.partition == key[1]), ()
        ) if topic else ()  # fmt: skip
        if set(replicas) == set(run.by_key[key].after):
            done.append(key)
    return done


def _copied(run: Run, moving: Iterable[Key], done: Iterable[Key]) -> str:
    """MiB copied of the plan's total, and an ETA from the copy rate so far."""
    total = sum(m.bytes_to_copy for m in run.moves)
    if not total:
        return ""
    sizes = run.kafka.replica_sizes(_live(run))
    copied = sum(run.by_key[k].bytes_to_copy for k in done)
    for key in moving:
        move = run.by_key[key]
        copied += sum(min(sizes.get((key[0], key[1], b), 0), move.size_bytes) for b in move.added)
    now = time.monotonic()
    if run.rate_since is None:
        run.rate_since = (now, copied)
    since, then = run.rate_since
    rate = (copied - then) / (now - since) if now > since else 0.0
    eta = f", ETA {max(0, total - copied) / rate:.0f}s" if rate > 0 else ""
    return f", {copied / 2**20:.1f} of {total / 2**20:.1f} MiB copied{eta}"


def _live(run: Run) -> list[int]:
    return [b.node_id for b in run.admin.describe_cluster().brokers]


def conclude(run: Run, state: str) -> None:
    """Preferred leaders elected (when done), then every throttle this reassignment set
    removed; the store says so."""
    if state == "done":
        keys = [k for k, s in stored.states(run.store, run.cluster).items() if s == "done"]
        try:
            run.kafka.elect_preferred(keys)
        except KafkaOperationError as exc:
            run.report(f"preferred leader election: {exc.message}")
    remove_throttles(run)
    stored.finish(run.store, run.cluster, state)
    run.report(f"reassignment {state}; no throttle left")


def remove_throttles(run: Run) -> None:
    applied = stored.current(run.store, run.cluster)
    if applied is None:
        return
    for topic in applied.throttled_topics:
        present = run.admin.describe_topics_if_present([topic])
        if present:
            run.admin.set_configs("topic", topic, {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None})
    live = set(_live(run))
    for broker in applied.throttled_brokers:
        if broker in live:  # a broker that died since has lost its dynamic configs' use
            run.admin.set_configs("broker", str(broker), {LEADER_RATE: None, FOLLOWER_RATE: None})


def cancel(run: Run) -> list[Key]:
    """KIP-455 cancel of the partitions still moving; throttles removed."""
    moving = [k for k, s in stored.states(run.store, run.cluster).items() if s == "moving"]
    if moving:
        run.kafka.submit(dict.fromkeys(moving))
    pending = [k for k, s in stored.states(run.store, run.cluster).items() if s != "done"]
    stored.set_states(run.store, run.cluster, pending, "cancelled")
    conclude(run, "cancelled")
    return moving
