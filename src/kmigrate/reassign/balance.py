"""Step 3 of the planner: replicas move until every broker holds the floor or the ceiling
of the average (pure).

Each move is the best of all single moves that help: first one that fixes an excess and
a shortfall at once, then one that fixes either; among those a move within a rack, then
the smallest replica, a follower before the leader among replicas of about the same size.
When racks leave no single move, two: an over-full broker's replica goes to a broker that
hands one of its own on to the broker below its share (the smallest such pair).

Cost: a broker's best move is remembered until something it depends on changes (its own
replicas, or a partition it holds moves), so a move re-examines only the three or four
brokers holding the moved partition, each from its own best replicas on.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from kmigrate.reassign.holdings import Entry, Holdings, Key, Step

# (across racks, *Entry, from, to): the smallest is the best move.
Candidate = tuple[int, int, int, int, Key, int, int]
Givers = tuple[tuple[int, tuple[int, ...]], ...]  # brokers that give, each with its takers


@dataclass(frozen=True)
class Bands:
    """Brokers by count: ``over`` the ceiling, at the ceiling (``top``) or the floor
    (``bottom``) when they differ, ``under`` the floor; each in broker order."""

    over: tuple[int, ...]
    top: tuple[int, ...]
    bottom: tuple[int, ...]
    under: tuple[int, ...]

    @staticmethod
    def of(counts: dict[int, int], brokers: list[int], floor: int, ceiling: int) -> Bands:
        split = floor < ceiling
        return Bands(
            tuple(b for b in brokers if counts[b] > ceiling),
            tuple(b for b in brokers if split and counts[b] == ceiling),
            tuple(b for b in brokers if split and counts[b] == floor),
            tuple(b for b in brokers if counts[b] < floor),
        )

    def helpful(self) -> list[tuple[int, int]]:
        """Every (from, to) whose move fixes an excess, a shortfall or both, in order."""
        pairs = [(s, d) for s in self.over for d in (*self.under, *self.bottom)]
        return sorted(pairs + [(s, d) for s in self.top for d in self.under])


def balance(holdings: Holdings) -> None:
    """Move replicas (through ``holdings``) until every eligible broker holds the floor
    or the ceiling of the average, or no move or pair of moves can bring one closer."""
    total = sum(holdings.counts.values())
    floor, ceiling = total // len(holdings.eligible), -(-total // len(holdings.eligible))
    chooser = _Chooser(holdings)
    for _ in range(total):
        bands = Bands.of(holdings.counts, holdings.eligible, floor, ceiling)
        move = chooser.best_move(bands)
        steps = [move] if move is not None else _chain(holdings, bands)
        if not steps:
            return
        for key, src, dst in steps:
            holdings.move(key, src, dst)


class _Chooser:
    """The best single move. Per band of givers and their receivers, a heap of each
    giver's best move; a giver is searched again only when its version changed."""

    def __init__(self, holdings: Holdings) -> None:
        self.holdings = holdings
        self._ranked: dict[int, _Ranked] = {}  # by order: 0 fixes both, 1 fixes one

    def best_move(self, bands: Bands) -> Step | None:
        best = self._best(0, tuple((s, bands.under) for s in bands.over))
        if best is None:  # nothing fixes both: what fixes one
            best = self._best(
                1,
                tuple((s, bands.bottom) for s in bands.over)
                + tuple((s, bands.under) for s in bands.top),
            )
        return None if best is None else (best[4], best[5], best[6])

    def _best(self, order: int, givers: Givers) -> Candidate | None:
        ranked = self._ranked.get(order)
        if ranked is None or ranked.givers != givers:
            ranked = self._ranked[order] = _Ranked(self.holdings, givers)
        return ranked.best()


class _Ranked:
    """The best move from any of ``givers`` (each with its receivers)."""

    def __init__(self, holdings: Holdings, givers: Givers) -> None:
        self.holdings = holdings
        self.givers = givers
        self._seen: dict[int, int] = {}  # giver -> version its heap entry is of
        self._heap: list[tuple[Candidate, int]] = []

    def best(self) -> Candidate | None:
        version = self.holdings.version
        for src, receivers in self.givers:
            if self._seen.get(src) != version[src]:
                self._seen[src] = version[src]
                found = _search(self.holdings, src, receivers) if receivers else None
                if found is not None:
                    heapq.heappush(self._heap, (found, version[src]))
        heap = self._heap
        while heap and heap[0][1] != version[heap[0][0][5]]:
            heapq.heappop(heap)  # the giver changed since
        return heap[0][0] if heap else None


def _search(h: Holdings, src: int, receivers: tuple[int, ...]) -> Candidate | None:
    """The best move of one of ``src``'s replicas to one of ``receivers``: per rack of
    receivers, the first replica in preference order that one of them may take."""
    by_rack: dict[str | None, list[int]] = {}
    for d in receivers:
        by_rack.setdefault(h.rack[d], []).append(d)
    best: Candidate | None = None
    for rack, ds in by_rack.items():
        across = int(rack != h.rack[src])
        for entry in h.movable(src, rack):
            if best is not None and (across, *entry) > best[:5]:
                break  # nothing later in this list can beat it
            taker = next((d for d in ds if h.fits(entry[3], d, leaving=src)), None)
            if taker is not None:
                found: Candidate = (across, *entry, src, taker)
                best = found if best is None or found < best else best
                break
    return best


def _chain(holdings: Holdings, bands: Bands) -> list[Step]:
    """Two moves for an excess or a shortfall no single move can fix (racks kept apart):
    the over-full broker's replica goes to a broker (``mid``) that may take it, which
    hands one of its own on to the broker below its share (its own count stays). The
    pair of fewest bytes, then the earliest partition in the model; none: []."""
    pairs = bands.helpful()
    if not pairs:
        return []
    smallest = _Smallest(holdings)
    best: tuple[int, int, int, int, int, Key, Key] | None = None
    for src, dst in pairs:
        for mid in holdings.eligible:
            if mid in (src, dst):
                continue
            first = smallest.movable(src, mid)
            second = smallest.movable(mid, dst) if first is not None else None
            if first is None or second is None:
                continue
            found = (first[0] + second[0], first[1], src, dst, mid, first[2], second[2])
            best = found if best is None or found < best else best
    if best is None:
        return []
    _, _, src, dst, mid, key, handed_on = best
    return [(handed_on, mid, dst), (key, src, mid)]


class _Smallest:
    """For one chain search: per (giver, taker), the smallest replica the giver may
    hand the taker (size, model order, partition); None when there is none."""

    def __init__(self, holdings: Holdings) -> None:
        self.holdings = holdings
        self._found: dict[tuple[int, int], tuple[int, int, Key] | None] = {}
        self._sorted: dict[tuple[int, str | None], list[Entry]] = {}

    def movable(self, giver: int, taker: int) -> tuple[int, int, Key] | None:
        if (giver, taker) not in self._found:
            h = self.holdings
            self._found[(giver, taker)] = next(
                (
                    (e[2], h.index[e[3]], e[3])
                    for e in self._by_size(giver, h.rack[taker])
                    if h.fits(e[3], taker, leaving=giver)
                ),
                None,
            )
        return self._found[(giver, taker)]

    def _by_size(self, giver: int, rack: str | None) -> list[Entry]:
        if (giver, rack) not in self._sorted:
            h = self.holdings
            entries = sorted(h.movable(giver, rack), key=lambda e: (e[2], h.index[e[3]]))
            self._sorted[(giver, rack)] = entries
        return self._sorted[(giver, rack)]
