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
4. **Preferred leaders.** Replica lists are reordered (no data moves) so each broker
   is the first replica of the floor or ceiling of the average number of partitions.

Only partitions whose replica list changed become moves.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kmigrate.errors import ConfigError, ConflictError
from kmigrate.reassign.model import ClusterModel, Partition, Spread

GOALS = ("add", "drain", "rebalance", "replication-factor", "fix-offline", "file")


@dataclass(frozen=True)
class Goal:
    kind: str
    brokers: tuple[int, ...] = ()  # add, drain
    replication_factor: int | None = None
    topics: str | None = None  # a regex narrowing the partitions touched
    assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None  # file

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
    touched = partitions_matching(model, goal.topics)
    eligible = _eligible(model, goal, touched)
    if goal.kind == "file":
        assert goal.assignment is not None
        result = _from_file(model, touched, goal.assignment)
    else:
        work = _Work(model, eligible, {p.key: list(p.replicas) for p in touched})
        work.required(goal)
        work.place()
        work.balance()
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

    # -- 1
    def required(self, goal: Goal) -> None:
        allowed = set(self.eligible)
        for key, replicas in self.assignment.items():
            want = goal.replication_factor if goal.kind == "replication-factor" else None
            rf = want or len(replicas)
            self.assignment[key] = [b for b in replicas if b in allowed]
            while len(self.assignment[key]) > rf:  # a lower replication factor
                self._drop_one(key)
            kept = self._racks_apart(self.assignment[key], rf)
            self.assignment[key] = kept
            self.missing[key] = rf - len(kept)

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
        counts = self._counts()
        replicas = self.assignment[key]
        racks = Counter(self.rack[b] for b in replicas)
        candidates = replicas[1:] or replicas
        shared = [b for b in candidates if self.rack_count and racks[self.rack[b]] > 1]
        victim = max(shared or candidates, key=lambda b: (counts[b], b))
        replicas.remove(victim)

    # -- 2
    def place(self) -> None:
        for key in sorted(self.missing, key=lambda k: (-self.sizes.get(k, 0), k)):
            for _ in range(self.missing[key]):
                counts, targets = self._counts(), self._targets()
                candidates = [b for b in self.eligible if self._fits(key, b)]
                if not candidates:
                    raise ConflictError(
                        f"no broker can take another replica of {key[0]}[{key[1]}] with the "
                        "racks kept apart; add brokers or racks"
                    )
                best = min(candidates, key=lambda b: (counts[b] - targets[b], counts[b], b))
                self.assignment[key].append(best)
        self.missing.clear()

    def _fits(self, key: tuple[str, int], broker: int, leaving: int | None = None) -> bool:
        others = [b for b in self.assignment[key] if b != leaving]
        if broker in others:
            return False
        if not self.rack_count or self.rack_count < len(others) + 1:
            return True
        return self.rack[broker] not in {self.rack[b] for b in others}

    # -- 3
    def _counts(self) -> Counter[int]:
        counts: Counter[int] = Counter(dict.fromkeys(self.eligible, 0))
        for replicas in self.assignment.values():
            counts.update(replicas)
        return counts

    def _targets(self) -> dict[int, int]:
        """Each eligible broker's share: floor or ceiling of the average, the ceilings
        to the brokers holding the most now."""
        counts = self._counts()
        total = sum(len(r) for r in self.assignment.values()) + sum(self.missing.values())
        base, extra = divmod(total, len(self.eligible))
        order = sorted(self.eligible, key=lambda b: (-counts[b], b))
        return {b: base + (1 if i < extra else 0) for i, b in enumerate(order)}

    def balance(self) -> None:
        """Move replicas until every broker holds the floor or the ceiling of the
        average: first moves that fix an excess and a shortfall at once, then either;
        among them moves within a rack, then the smallest replica."""
        total = sum(len(r) for r in self.assignment.values())
        floor, ceiling = total // len(self.eligible), -(-total // len(self.eligible))
        for _ in range(total):
            counts = self._counts()
            move = self._smallest_move(counts, floor, ceiling)
            chain = [move] if move is not None else self._chain(counts, floor, ceiling)
            if not chain:
                return
            for key, src, dst in chain:
                replicas = self.assignment[key]
                replicas[replicas.index(src)] = dst

    def _chain(
        self, counts: Counter[int], floor: int, ceiling: int
    ) -> list[tuple[tuple[str, int], int, int]]:
        """Two moves for an excess or a shortfall no single move can fix (racks kept
        apart): the over-full broker's replica goes to a broker that may take it, which
        hands one of its own on to the broker below its share (its own count stays). The
        smallest such pair; none: []."""
        pairs = [
            (src, dst)
            for src in self.eligible
            for dst in self.eligible
            if _rank(counts, floor, ceiling, src, dst) is not None
        ]
        if not pairs:
            return []
        handoff = self._handoffs({dst for _, dst in pairs})
        best: tuple[int, list[tuple[tuple[str, int], int, int]]] | None = None
        for key, replicas in self.assignment.items():
            for src, dst in pairs:
                if src not in replicas:
                    continue
                for mid in self.eligible:
                    on = handoff.get((mid, dst))
                    if on is None or mid == src or not self._fits(key, mid, leaving=src):
                        continue
                    size = self.sizes.get(key, 0) + on[0]
                    if best is None or size < best[0]:
                        best = (size, [(on[1], mid, dst), (key, src, mid)])
        return [] if best is None else best[1]

    def _handoffs(self, receivers: set[int]) -> dict[tuple[int, int], tuple[int, tuple[str, int]]]:
        """For each broker and each of ``receivers``: the smallest replica it could hand
        to that receiver (size, partition)."""
        found: dict[tuple[int, int], tuple[int, tuple[str, int]]] = {}
        for key, replicas in self.assignment.items():
            size = self.sizes.get(key, 0)
            for mid in replicas:
                for dst in receivers:
                    smaller = (mid, dst) not in found or size < found[(mid, dst)][0]
                    if smaller and dst != mid and self._fits(key, dst, leaving=mid):
                        found[(mid, dst)] = (size, key)
        return found

    def _smallest_move(
        self, counts: Counter[int], floor: int, ceiling: int
    ) -> tuple[tuple[str, int], int, int] | None:
        best: tuple[int, int, int, int, int, tuple[str, int], int, int] | None = None
        for key in self.assignment:
            size = self.sizes.get(key, 0)
            for src in self.assignment[key]:
                for dst in self.eligible:
                    order = _rank(counts, floor, ceiling, src, dst)
                    if order is None or not self._fits(key, dst, leaving=src):
                        continue
                    # Within a rack first: it never leaves another replica nowhere to go.
                    across = int(self.rack[src] != self.rack[dst])
                    # Among replicas of about the same size (within 2x), a follower
                    # before the leader: moving the leader away changes the partition's
                    # leader when the move ends, a pause for its producers.
                    leads = int(self.leader.get(key) == src)
                    candidate = (order, across, size.bit_length(), leads, size, key, src, dst)
                    if best is None or candidate < best:
                        best = candidate
        return None if best is None else best[5:]

    # -- 4
    def leaders(self) -> None:
        """Reorder replica lists (no data moves) so every broker is the preferred leader
        of the floor or the ceiling of the average number of partitions: while a broker
        leads too many, find a chain of partitions handing one lead on from it to a
        broker that leads too few (a -> b when a leads a partition b also holds) and
        rotate the leads along it."""
        led: Counter[int] = Counter(dict.fromkeys(self.eligible, 0))
        for replicas in self.assignment.values():
            led[replicas[0]] += 1
        floor, ceiling = divmod(len(self.assignment), len(self.eligible))
        ceiling = floor + (1 if ceiling else 0)
        for _ in range(len(self.assignment) + 1):
            if any(led[b] > ceiling for b in self.eligible):
                sources = {b for b in self.eligible if led[b] > ceiling}
                sinks = {b for b in self.eligible if led[b] < ceiling}
            elif any(led[b] < floor for b in self.eligible):
                sources = {b for b in self.eligible if led[b] > floor}
                sinks = {b for b in self.eligible if led[b] < floor}
            else:
                return
            chain = self._lead_chain(sources, sinks)
            if chain is None:
                return
            for key, new_leader in chain:
                replicas = self.assignment[key]
                i = replicas.index(new_leader)
                led[replicas[0]] -= 1
                led[new_leader] += 1
                replicas[0], replicas[i] = replicas[i], replicas[0]

    def _lead_chain(
        self, sources: set[int], sinks: set[int]
    ) -> list[tuple[tuple[str, int], int]] | None:
        """Breadth-first: the shortest chain of (partition, its new leader) from a
        source broker to a sink broker."""
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for key in sorted(self.assignment):
            by_leader.setdefault(self.assignment[key][0], []).append(key)
        parent: dict[int, tuple[int, tuple[str, int]] | None] = dict.fromkeys(sorted(sources))
        frontier = sorted(sources)
        while frontier:
            following = []
            for broker in frontier:
                for key in by_leader.get(broker, []):
                    for other in self.assignment[key][1:]:
                        if other in parent or other not in self.eligible:
                            continue
                        parent[other] = (broker, key)
                        if other in sinks:
                            chain = []
                            at = other
                            while parent[at] is not None:
                                before, via = parent[at]  # type: ignore[misc]
                                chain.append((via, at))
                                at = before
                            return list(reversed(chain))
                        following.append(other)
            frontier = following
        return None


def _rank(counts: Counter[int], floor: int, ceiling: int, src: int, dst: int) -> int | None:
    """How much moving a replica from ``src`` to ``dst`` helps balance: 0 fixes an excess
    and a shortfall at once, 1 one of them, None neither."""
    fixes_excess = counts[src] > ceiling and counts[dst] < ceiling
    fixes_shortfall = counts[dst] < floor and counts[src] > floor
    if fixes_excess and fixes_shortfall:
        return 0
    return 1 if fixes_excess or fixes_shortfall else None


def _ids(items: Iterable[int]) -> str:
    return ",".join(str(i) for i in items)
