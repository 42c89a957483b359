"""Step 4 of the planner: preferred leaders spread by reordering replica lists (pure; no
data moves).

Cost: for each (leader, follower) the partitions that leader leads and that follower
holds are kept sorted, updated per rotation; a chain search reads the first of each
list of the frontier brokers (brokers squared at most), not their partitions.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from kmigrate.reassign.holdings import Key

Link = tuple[Key, int]  # a partition and its new preferred leader


def spread_leaders(assignment: dict[Key, list[int]], eligible: list[int]) -> None:
    """Reorder replica lists (in place) so every broker is the preferred leader of the
    floor or the ceiling of the average number of partitions, where the replica sets
    allow: while a broker leads too many, find the shortest chain of partitions handing
    one lead on from it to a broker that leads too few (a -> b when a leads a partition
    b also holds) and rotate the leads along it."""
    led = _Leads(assignment, eligible)
    floor, extra = divmod(len(assignment), len(eligible))
    ceiling = floor + (1 if extra else 0)
    for _ in range(len(assignment) + 1):
        counts = led.counts
        if any(counts[b] > ceiling for b in eligible):
            sources = {b for b in eligible if counts[b] > ceiling}
            sinks = {b for b in eligible if counts[b] < ceiling}
        elif any(counts[b] < floor for b in eligible):
            sources = {b for b in eligible if counts[b] > floor}
            sinks = {b for b in eligible if counts[b] < floor}
        else:
            return
        chain = led.chain(sources, sinks)
        if chain is None:
            return
        for key, new_leader in chain:
            led.hand(key, new_leader)


class _Leads:
    """Who leads how many partitions, and for each (leader, follower) the partitions
    that leader leads and that follower holds (sorted), kept current per rotation."""

    def __init__(self, assignment: dict[Key, list[int]], eligible: list[int]) -> None:
        self.assignment = assignment
        self.eligible = set(eligible)
        self.counts = dict.fromkeys(eligible, 0)
        self.edges: dict[int, dict[int, list[Key]]] = {}
        for key in sorted(assignment):
            leader = assignment[key][0]
            self.counts[leader] = self.counts.get(leader, 0) + 1
            for follower in assignment[key][1:]:
                self._lists(leader, follower).append(key)

    def _lists(self, leader: int, follower: int) -> list[Key]:
        return self.edges.setdefault(leader, {}).setdefault(follower, [])

    def hand(self, key: Key, new_leader: int) -> None:
        replicas = self.assignment[key]
        old = replicas[0]
        for follower in replicas[1:]:
            keys = self.edges[old][follower]
            del keys[bisect_left(keys, key)]
        i = replicas.index(new_leader)
        replicas[0], replicas[i] = replicas[i], replicas[0]
        for follower in replicas[1:]:
            insort(self._lists(new_leader, follower), key)
        self.counts[old] -= 1
        self.counts[new_leader] += 1

    def chain(self, sources: set[int], sinks: set[int]) -> list[Link] | None:
        """Breadth-first: the shortest chain of (partition, its new leader) from a
        source broker to a sink broker. Brokers are reached in the order a scan of each
        frontier broker's led partitions (sorted), followers in replica order, would
        reach them: each by its first such partition."""
        parent: dict[int, tuple[int, Key] | None] = dict.fromkeys(sorted(sources))
        frontier = sorted(sources)
        while frontier:
            following = []
            for broker in frontier:
                for key, other in self._reached(broker, parent):
                    parent[other] = (broker, key)
                    if other in sinks:
                        return _path(parent, other)
                    following.append(other)
            frontier = following
        return None

    def _reached(
        self, broker: int, parent: dict[int, tuple[int, Key] | None]
    ) -> list[tuple[Key, int]]:
        """The brokers not yet reached that follow in a partition ``broker`` leads, by
        (its first such partition, their place in that partition's replicas)."""
        firsts = [
            (keys[0], self.assignment[keys[0]].index(other), other)
            for other, keys in self.edges.get(broker, {}).items()
            if keys and other not in parent and other in self.eligible
        ]
        return [(key, other) for key, _, other in sorted(firsts)]


def _path(parent: dict[int, tuple[int, Key] | None], sink: int) -> list[Link]:
    chain = []
    at = sink
    while (step := parent[at]) is not None:
        before, via = step
        chain.append((via, at))
        at = before
    return list(reversed(chain))
