"""Who holds which replica, kept current move by move: the index the balance reads (pure).

For every broker and every rack, the broker's replicas that may move to a broker in that
rack with the racks kept apart, in the balance's order of preference. A move touches only
the lists of the brokers that hold the moved partition, so choosing a move reads one
broker's own replicas, never the whole cluster.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence

Key = tuple[str, int]
# A replica as the balance ranks it: size's bit length (sizes within 2x rank alike), 1 if
# its broker is the partition's current leader, size, the partition.
Entry = tuple[int, int, int, Key]
Step = tuple[Key, int, int]  # a replica of the partition moves from one broker to another


def fits(
    replicas: Sequence[int],
    broker: int,
    rack: Mapping[int, str | None],
    rack_count: int,
    leaving: int | None = None,
) -> bool:
    """Whether ``broker`` may hold a replica of a partition on ``replicas`` (``leaving``
    gives its replica up): it holds none yet, and when there are at least as many racks
    as replicas, its rack is not another replica's."""
    others = [b for b in replicas if b != leaving]
    if broker in others:
        return False
    if not rack_count or rack_count < len(others) + 1:
        return True
    return rack[broker] not in {rack[b] for b in others}


class Holdings:
    """The assignment with per-broker counts and per-(broker, rack) movable replicas,
    updated by :meth:`move`. ``version[b]`` changes whenever anything a choice about
    broker b's replicas depends on changes (b gains or loses a replica, or a partition b
    holds moves)."""

    def __init__(
        self,
        assignment: dict[Key, list[int]],
        eligible: list[int],
        rack: Mapping[int, str | None],
        rack_count: int,
        sizes: Mapping[Key, int],
        leader: Mapping[Key, int | None],
    ) -> None:
        self.assignment = assignment
        self.eligible = eligible
        self.rack = rack
        self.rack_count = rack_count
        self.sizes = sizes
        self.leader = leader
        self.index = {key: i for i, key in enumerate(assignment)}  # the model's order
        self.counts = dict.fromkeys(eligible, 0)
        self.version = dict.fromkeys(eligible, 0)
        # Without a rack on every broker racks constrain nothing: one list per broker.
        self.rack_names = sorted({str(rack[b]) for b in eligible}) if rack_count else ["*"]
        self._movable: dict[int, dict[str, list[Entry]]] = {
            b: {r: [] for r in self.rack_names} for b in eligible
        }
        for key, replicas in assignment.items():
            for b in replicas:
                self.counts[b] += 1
                for r in self._open_racks(replicas, b):
                    self._movable[b][r].append(self.entry(key, b))
        for lists in self._movable.values():
            for entries in lists.values():
                entries.sort()

    def entry(self, key: Key, broker: int) -> Entry:
        size = self.sizes.get(key, 0)
        return (size.bit_length(), int(self.leader.get(key) == broker), size, key)

    def fits(self, key: Key, broker: int, leaving: int | None = None) -> bool:
        return fits(self.assignment[key], broker, self.rack, self.rack_count, leaving)

    def movable(self, broker: int, to_rack: str | None) -> list[Entry]:
        """Broker's replicas, best first, that may go to a broker in ``to_rack`` as far
        as racks go (whether the receiver already holds the partition is not checked):
        every replica that fits such a receiver is in the list."""
        lists = self._movable[broker]
        return lists[str(to_rack)] if self.rack_count else lists["*"]

    def move(self, key: Key, src: int, dst: int) -> None:
        replicas = self.assignment[key]
        before = list(replicas)
        replicas[replicas.index(src)] = dst
        for b in {*before, dst}:
            was = self._open_racks(before, b) if b != dst else ()
            now = self._open_racks(replicas, b) if b != src else ()
            if was == now:
                continue  # the usual case for the partition's other holders
            entry = self.entry(key, b)
            for r in was:
                if r not in now:
                    entries = self._movable[b][r]
                    del entries[bisect_left(entries, entry)]
            for r in now:
                if r not in was:
                    insort(self._movable[b][r], entry)
        self.counts[src] -= 1
        self.counts[dst] += 1
        for b in {*before, dst}:
            self.version[b] += 1

    def _open_racks(self, replicas: Sequence[int], holder: int) -> Sequence[str]:
        """The racks a broker could take ``holder``'s replica in: all, unless racks are
        kept apart for this partition, then those no other replica is in."""
        if not self.rack_count or self.rack_count < len(replicas):
            return self.rack_names
        taken = {str(self.rack[b]) for b in replicas if b != holder}
        return [r for r in self.rack_names if r not in taken]
