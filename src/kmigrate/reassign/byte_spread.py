"""Step 3b of the planner: bytes per broker brought within a tolerance of the mean by
exchanging replicas between brokers, replica counts kept (pure).

Counts balanced alone can leave a broker full of small partitions and another of large
ones: an added broker that takes the cheapest replicas holds a fraction of the bytes the
others hold. Here, while a broker holds more than ``1 + tolerance`` times the mean bytes
or less than ``1 - tolerance`` times it, a heavy broker and a light one exchange: a
replica goes from the heavy to the light one and, unless their counts allow a single
move (heavy at the ceiling, light at the floor), a smaller one comes back. An exchange
is taken only if it narrows the pair's difference (so the sum of squared loads falls and
the step ends); among those, the ones that at least halve it, then fewer current leaders
moved (a leader that moves pauses its producers), then fewer bytes to copy (a replica
sent back to a broker it was on before the plan costs nothing), then the partitions'
order: the same input gives the same plan.

Cost: per exchange, the largest replicas of the heavy broker (at most ``SCAN``) each
look up the light broker's replicas of a fitting size by bisection (at most ``SCAN``
of them); brokers' sorted replica lists are kept current move by move.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.reassign.holdings import Holdings, Key

TOLERANCE = 0.10
ROUNDS = 10  # exchanges at most, per replica
SCAN = 48  # replicas looked at per side and exchange: the best are near the front

Item = tuple[int, int, Key]  # size, the partition's place in the model, the partition


@dataclass(frozen=True, order=True)
class Exchange:
    """``key``'s replica goes heavy -> light, ``back``'s (if any) light -> heavy; the
    smallest rank is the best."""

    rank: tuple[int, int, int, int, int]  # not halving, leaders moved, cost, index, index
    heavy: int
    light: int
    key: Key
    back: Key | None


def spread_bytes(
    holdings: Holdings,
    original: Mapping[Key, tuple[int, ...]],
    tolerance: float = TOLERANCE,
) -> None:
    """Exchange replicas (through ``holdings``) until every eligible broker holds within
    ``tolerance`` of the mean bytes, or no exchange between a broker outside it and
    another narrows their difference. ``original``: each partition's replicas before the
    plan (what a move costs)."""
    loads = _Loads(holdings, original)
    # Each exchange lowers the sum of squared loads, so this ends; the bound is a guard.
    for _ in range(ROUNDS * (sum(holdings.counts.values()) + 1)):
        outside = loads.outside(tolerance)
        if not outside:
            return
        exchange = next(
            (found for pair in loads.pairs(outside) if (found := loads.best(*pair)) is not None),
            None,
        )
        if exchange is None:
            return
        loads.apply(exchange)


class _Loads:
    """Each eligible broker's bytes and its replicas sorted by size, kept current."""

    def __init__(self, holdings: Holdings, original: Mapping[Key, tuple[int, ...]]) -> None:
        self.h = holdings
        self.original = original
        self.load = dict.fromkeys(holdings.eligible, 0)
        self.items: dict[int, list[Item]] = {b: [] for b in holdings.eligible}
        for key, replicas in holdings.assignment.items():
            for b in replicas:
                if b in self.load:
                    self.load[b] += self._size(key)
                    self.items[b].append(self._item(key))
        for items in self.items.values():
            items.sort()
        total = sum(holdings.counts[b] for b in holdings.eligible)
        self.floor = total // len(holdings.eligible)
        self.ceiling = -(-total // len(holdings.eligible))
        self.mean = sum(self.load.values()) / len(holdings.eligible)

    def _size(self, key: Key) -> int:
        return self.h.sizes.get(key, 0)

    def _item(self, key: Key) -> Item:
        return (self._size(key), self.h.index[key], key)

    def outside(self, tolerance: float) -> list[int]:
        """Brokers outside the band, furthest first."""
        low, high = self.mean * (1 - tolerance), self.mean * (1 + tolerance)
        out = [b for b in self.h.eligible if not low <= self.load[b] <= high]
        return sorted(out, key=lambda b: (-abs(self.load[b] - self.mean), b))

    def pairs(self, outside: list[int]) -> list[tuple[int, int]]:
        """(heavy, light) pairs with a broker outside the band in each, the widest gap
        first."""
        found = set()
        for b in outside:
            for o in self.h.eligible:
                if self.load[o] != self.load[b]:
                    found.add((b, o) if self.load[b] > self.load[o] else (o, b))
        return sorted(found, key=lambda p: (self.load[p[1]] - self.load[p[0]], p))

    def best(self, heavy: int, light: int) -> Exchange | None:
        """The best exchange from ``heavy`` to ``light`` that narrows their gap."""
        gap = self.load[heavy] - self.load[light]
        single = self.h.counts[heavy] == self.ceiling > self.floor == self.h.counts[light]
        best: Exchange | None = None
        for size, index, key in reversed(self.items[heavy][-SCAN:]):
            if size == 0:
                break
            if not self.h.fits(key, light, leaving=heavy):
                continue
            leader = int(self.h.leader.get(key) == heavy)
            cost = self._cost(key, heavy, light)
            if single and size < gap:
                alone = Exchange((_not_halving(size, gap), leader, cost, index, -1),
                                 heavy, light, key, None)  # fmt: skip
                best = alone if best is None or alone < best else best
            for back_size, back_index, back in self._backs(light, size, gap):
                if not self.h.fits(back, heavy, leaving=light):
                    continue
                rank = (
                    _not_halving(size - back_size, gap),
                    leader + int(self.h.leader.get(back) == light),
                    cost + self._cost(back, light, heavy),
                    index,
                    back_index,
                )
                found = Exchange(rank, heavy, light, key, back)
                best = found if best is None or found < best else best
        return best

    def _backs(self, light: int, size: int, gap: int) -> list[Item]:
        """The light broker's replicas whose exchange for one of ``size`` narrows the
        gap (smaller, by less than the gap), from the one that halves it outwards."""
        items = self.items[light]
        lo = bisect_left(items, (size - gap + 1, -1))
        hi = bisect_left(items, (size, -1))
        if lo >= hi:
            return []
        middle = bisect_left(items, (size - gap // 2, -1), lo, hi)
        below = range(middle - 1, max(lo, middle - SCAN) - 1, -1)
        above = range(middle, min(hi, middle + SCAN))
        return [items[i] for i in sorted([*below, *above], key=lambda i: (abs(i - middle), i))]

    def _cost(self, key: Key, src: int, dst: int) -> int:
        """Bytes the plan copies more (or fewer) when ``key``'s replica goes src -> dst."""
        size, was = self._size(key), self.original.get(key, ())
        return size * (int(dst not in was) - int(src not in was))

    def apply(self, exchange: Exchange) -> None:
        self._move(exchange.key, exchange.heavy, exchange.light)
        if exchange.back is not None:
            self._move(exchange.back, exchange.light, exchange.heavy)

    def _move(self, key: Key, src: int, dst: int) -> None:
        item = self._item(key)
        items = self.items[src]
        del items[bisect_left(items, item)]
        insort(self.items[dst], item)
        self.load[src] -= item[0]
        self.load[dst] += item[0]
        self.h.move(key, src, dst)


def _not_halving(moved: int, gap: int) -> int:
    """0 when moving ``moved`` bytes leaves the pair's gap at most half what it was."""
    return int(4 * moved < gap or 4 * moved > 3 * gap)
