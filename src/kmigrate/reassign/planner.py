"""The reassignment planner: a cluster model and one goal in, the fewest replica moves
that reach it out. Pure.

Steps, each touching only what it must:

1. **Required moves.** Replicas on brokers that are drained, dead (``fix-offline``) or
   not in the cluster leave; a replication-factor change adds or drops replicas; a
   replica that shares a rack with another replica of its partition (when there are
   at least as many racks as replicas) leaves.
2. **Placement.** Each replica that must find a broker goes to the eligible broker
   furthest below its share that does not hold the partition and keeps the racks apart.
3. **Balance.** Every eligible broker's share of the touched partitions' replicas is
   the floor or the ceiling of the average; the brokers that hold the most keep the
   ceilings (fewest moves). While a broker holds more than its share, one of its
   replicas moves to a broker below its share: the smallest (fewest bytes), and among
   replicas of about the same size (within 2x) a follower before the leader (a leader
   that moves away pauses the partition's producers when the move ends).
   Then, unless the goal asks for replica counts alone, bytes: while a broker holds
   more than 10 % above or below the mean bytes, a heavy and a light broker exchange
   replicas (counts kept), fewest leaders and bytes moved first
   (:mod:`kmigrate.reassign.byte_spread`).
4. **Preferred leaders.** Replica lists are reordered (no data moves) so each broker
   is the first replica of the floor or ceiling of the average number of partitions.

Only partitions whose replica list changed become moves.

Steps 3 and 4 live in :mod:`kmigrate.reassign.balance` and :mod:`kmigrate.reassign.leaders`
over an index (:mod:`kmigrate.reassign.holdings`) that each move updates where it must,
so a plan costs about (replicas + moves x brokers) x log, not moves x replicas x brokers:
100,000 replicas on 50 brokers plan in seconds (bench/reassign_scale.py). The plans are
the ones the first, exhaustive planner made, tie for tie.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kmigrate.errors import ConfigError, ConflictError
from kmigrate.reassign.balance import balance
from kmigrate.reassign.byte_spread import spread_bytes
from kmigrate.reassign.holdings import Holdings, fits
from kmigrate.reassign.leaders import spread_leaders
from kmigrate.reassign.model import ClusterModel, Partition, Spread

GOALS = ("add", "drain", "rebalance", "replication-factor", "fix-offline", "file")
BALANCES = ("bytes", "replicas")  # what step 3 evens out: counts and bytes, or counts


@dataclass(frozen=True)
class Goal:
    kind: str
    brokers: tuple[int, ...] = ()  # add, drain
    replication_factor: int | None = None
    topics: str | None = None  # a regex narrowing the partitions touched
    assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None  # file
    balance: str = "bytes"  # or "replicas": counts only, the fewest moves

    def describe(self) -> str:
        what = {
            "add": f"add brokers {_ids(self.brokers)}",
            "drain": f"drain brokers {_ids(self.brokers)}",
            "rebalance": "rebalance",
            "replication-factor": f"replication factor {self.replication_factor}",
            "fix-offline": "move replicas off dead brokers",
            "file": "apply a reassignment file",
        }[self.kind]
        return what + (f" (topics matching {self.topics})" if self.topics else "")


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    size_bytes: int = 0

    @property
    def added(self) -> list[int]:
        return [b for b in self.after if b not in self.before]

    @property
    def removed(self) -> list[int]:
        return [b for b in self.before if b not in self.after]

    @property
    def bytes_to_copy(self) -> int:
        return self.size_bytes * len(self.added)


@dataclass(frozen=True)
class ReassignPlan:
    goal: Goal
    cluster_id: str | None
    moves: tuple[Move, ...]
    before: Spread
    after: Spread
    brokers: tuple[int, ...] = field(default=())  # the eligible brokers

    @property
    def replicas_moved(self) -> int:
        return sum(len(m.added) for m in self.moves)

    @property
    def bytes_to_copy(self) -> int:
        return sum(m.bytes_to_copy for m in self.moves)


def plan_reassignment(model: ClusterModel, goal: Goal) -> ReassignPlan:
    if goal.kind not in GOALS:
        raise ConfigError(f"unknown goal '{goal.kind}' (one of {', '.join(GOALS)})")
    if goal.balance not in BALANCES:
        raise ConfigError(f"--balance {goal.balance}: one of {', '.join(BALANCES)}")
    touched = partitions_matching(model, goal.topics)
    eligible = _eligible(model, goal, touched)
    if goal.kind == "file":
        assert goal.assignment is not None
        result = _from_file(model, touched, goal.assignment)
    else:
        work = _Work(model, eligible, {p.key: list(p.replicas) for p in touched})
        work.required(goal)
        work.place()
        work.balance(goal.balance == "bytes")
        work.leaders()
        result = {p.key: tuple(work.assignment[p.key]) for p in touched}
    moves = tuple(
        Move(p.topic, p.partition, p.replicas, result[p.key], p.size_bytes)
        for p in touched
        if result[p.key] != p.replicas
    )
    after = [Partition(p.topic, p.partition, result[p.key], p.size_bytes) for p in touched]
    brokers = sorted({*eligible, *(b for p in touched for b in p.replicas)})
    return ReassignPlan(
        goal,
        model.cluster_id,
        moves,
        Spread.of(touched, brokers),
        Spread.of(after, brokers),
        tuple(eligible),
    )


# ---------------------------------------------------------------- scope


def partitions_matching(model: ClusterModel, topics: str | None) -> list[Partition]:
    if topics is None:
        return list(model.partitions)
    try:
        pattern = re.compile(topics)
    except re.error as exc:
        raise ConfigError(f"--topics {topics}: not a regular expression ({exc})") from None
    chosen = [p for p in model.partitions if pattern.fullmatch(p.topic)]
    if not chosen:
        raise ConfigError(f"no topic matches --topics {topics}")
    return chosen


def _eligible(model: ClusterModel, goal: Goal, touched: list[Partition]) -> list[int]:
    """The brokers the goal may place replicas on."""
    for b in goal.brokers:
        broker = model.broker(b)
        if broker is None:
            raise ConflictError(
                f"broker {b} is not in the cluster "
                f"(brokers: {_ids(n.node_id for n in model.brokers)})"
            )
        if not broker.alive:
            raise ConflictError(f"broker {b} is not alive; start it first or use --fix-offline")
    live = model.live_ids
    eligible = [b for b in live if not (goal.kind == "drain" and b in goal.brokers)]
    widest = max(
        (goal.replication_factor or 0) if goal.kind == "replication-factor" else 0,
        *(len(p.replicas) for p in touched),
    )
    if len(eligible) < widest:
        raise ConflictError(
            f"{len(eligible)} broker(s) would be left for partitions of {widest} replicas; "
            "add brokers first or lower the replication factor"
        )
    return eligible


def _from_file(
    model: ClusterModel,
    touched: list[Partition],
    assignment: Mapping[tuple[str, int], tuple[int, ...]],
) -> dict[tuple[str, int], tuple[int, ...]]:
    known = {p.key for p in model.partitions}
    live = set(model.live_ids)
    for (topic, partition), replicas in assignment.items():
        if (topic, partition) not in known:
            raise ConflictError(f"the file names {topic}[{partition}], which the cluster has not")
        dead = [b for b in replicas if b not in live]
        if dead:
            raise ConflictError(
                f"the file puts {topic}[{partition}] on broker(s) {_ids(dead)}, which are not "
                "live members of the cluster"
            )
        if len(set(replicas)) != len(replicas) or not replicas:
            raise ConflictError(f"the file gives {topic}[{partition}] repeated or no replicas")
    return {p.key: tuple(assignment.get(p.key, p.replicas)) for p in touched}


# ---------------------------------------------------------------- the work


class _Work:
    """Steps 1 and 2 on the assignment (in place), with each broker's replica count kept
    current; steps 3 and 4 in :mod:`balance` and :mod:`leaders`."""

    def __init__(
        self, model: ClusterModel, eligible: list[int], assignment: dict[tuple[str, int], list[int]]
    ) -> None:
        self.model = model
        self.eligible = eligible
        self.rack = model.racks()
        self.assignment = assignment
        self.sizes = {p.key: p.size_bytes for p in model.partitions}
        self.leader = {p.key: p.current_leader for p in model.partitions}
        self.missing: Counter[tuple[str, int]] = Counter()  # replicas to place
        racks = {self.rack[b] for b in eligible}
        self.rack_count = len(racks) if None not in racks else 0
        self.counts: Counter[int] = Counter(dict.fromkeys(eligible, 0))
        for replicas in assignment.values():
            self.counts.update(replicas)

    def _keep(self, key: tuple[str, int], replicas: list[int]) -> None:
        """The partition's replicas become ``replicas`` (a subset), counts follow."""
        if len(replicas) != len(self.assignment[key]):
            self.counts.subtract(Counter(self.assignment[key]) - Counter(replicas))
        self.assignment[key] = replicas

    # -- 1
    def required(self, goal: Goal) -> None:
        allowed = set(self.eligible)
        for key, replicas in self.assignment.items():
            want = goal.replication_factor if goal.kind == "replication-factor" else None
            rf = want or len(replicas)
            self._keep(key, [b for b in replicas if b in allowed])
            while len(self.assignment[key]) > rf:  # a lower replication factor
                self._drop_one(key)
            self._keep(key, self._racks_apart(self.assignment[key], rf))
            self.missing[key] = rf - len(self.assignment[key])

    def _racks_apart(self, replicas: list[int], rf: int) -> list[int]:
        """Replicas in order, without one that repeats an earlier one's rack (when there
        are at least ``rf`` racks: every replica can have its own)."""
        if not self.rack_count or self.rack_count < rf:
            return replicas
        seen: set[str | None] = set()
        kept = []
        for b in replicas:
            if self.rack[b] in seen:
                continue
            seen.add(self.rack[b])
            kept.append(b)
        return kept

    def _drop_one(self, key: tuple[str, int]) -> None:
        """Drop a replica whose rack another replica shares, else the one on the fullest
        broker; the preferred leader stays."""
        replicas = self.assignment[key]
        racks = Counter(self.rack[b] for b in replicas)
        candidates = replicas[1:] or replicas
        shared = [b for b in candidates if self.rack_count and racks[self.rack[b]] > 1]
        victim = max(shared or candidates, key=lambda b: (self.counts[b], b))
        self._keep(key, [b for b in replicas if b != victim])

    # -- 2
    def place(self) -> None:
        # The share counts the replicas still to place as well as those placed.
        total = sum(len(r) for r in self.assignment.values()) + sum(self.missing.values())
        wanting = [key for key, n in self.missing.items() if n > 0]
        for key in sorted(wanting, key=lambda k: (-self.sizes.get(k, 0), k)):
            for _ in range(self.missing[key]):
                targets = self._targets(total)
                best = min(
                    (b for b in self.eligible if self._fits(key, b)),
                    key=lambda b: (self.counts[b] - targets[b], self.counts[b], b),
                    default=None,
                )
                if best is None:
                    raise ConflictError(
                        f"no broker can take another replica of {key[0]}[{key[1]}] with the "
                        "racks kept apart; add brokers or racks"
                    )
                self.assignment[key].append(best)
                self.counts[best] += 1
                # As in the first planner: the count still to place is not lowered as
                # replicas land, so the total grows; that only moves which brokers hold
                # a ceiling share, and keeps plans as they were.
                total += 1
        self.missing.clear()

    def _fits(self, key: tuple[str, int], broker: int) -> bool:
        return fits(self.assignment[key], broker, self.rack, self.rack_count)

    def _targets(self, total: int) -> dict[int, int]:
        """Each eligible broker's share of ``total``: floor or ceiling of the average,
        the ceilings to the brokers holding the most now."""
        base, extra = divmod(total, len(self.eligible))
        order = sorted(self.eligible, key=lambda b: (-self.counts[b], b))
        return {b: base + (1 if i < extra else 0) for i, b in enumerate(order)}

    # -- 3, 4
    def balance(self, by_bytes: bool) -> None:
        holdings = Holdings(
            self.assignment, self.eligible, self.rack, self.rack_count, self.sizes, self.leader
        )
        balance(holdings)
        if by_bytes:
            spread_bytes(holdings, {p.key: p.replicas for p in self.model.partitions})

    def leaders(self) -> None:
        spread_leaders(self.assignment, self.eligible)


def _ids(items: Iterable[int]) -> str:
    return ",".join(str(i) for i in items)
