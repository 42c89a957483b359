"""The high watermarks an instance has seen, per backend partition: what a failover
migration takes as the origin's end offset when the origin is down (seed 000's timer
that records endOffset while the origin is healthy).

Each instance learns them from the answers it forwards (a fetch's high watermark, a
write's end) and stores them in its own znode, ``<path>/marks/<id>`` (persistent: what
an instance saw before it died still counts): every MARK_EVERY_S, and before it answers
a fetch (or a ListOffsets for the latest offset) whose high watermark the last store
does not cover (kmigrate.gateway.serving.marked). A client therefore never holds an
offset beyond a stored mark, so a failover, which starts the target's offsets at the
highest stored mark, never renumbers a record a consumer read (its next fetch is never
past the target's end). Stores are coalesced: one at a time, each holding every mark
seen until it starts; answers waiting for marks it holds wait for it.

A high watermark is a lower bound of what the partition holds and falls on a batch
boundary (followers copy whole batches), so it is safe as a migration offset, as is a
write's end (its base offset plus the offsets its batches take); records
acknowledged after the last store (a write's offset is not waited for) are the range
a failover cannot serve, reported once the origin is back.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping

log = logging.getLogger("kmigrate.gateway.marks")

MARK_EVERY_S = 1.0
Key = tuple[str, str, int]  # (cluster, topic, partition)
Store = Callable[[Mapping[Key, int]], Awaitable[None]]


class Marks:
    """The marks seen and the marks stored (pure bookkeeping, one store at a time)."""

    def __init__(self) -> None:
        self._high: dict[Key, int] = {}
        self._stored: Mapping[Key, int] = {}  # what the last store that succeeded held
        self._taken: Mapping[Key, int] = {}  # what the store under way holds
        self._changed = False

    def saw(self, cluster: str, topic: str, partition: int, offset: int) -> None:
        key = (cluster, topic, partition)
        if offset > self._high.get(key, -1):
            self._high[key] = offset
            self._changed = True

    @property
    def changed(self) -> bool:
        """Whether a mark was seen that no store has taken yet."""
        return self._changed

    def covered(self, needs: Iterable[tuple[Key, int]]) -> bool:
        """Whether the last store held a mark at least as high as each of ``needs``."""
        return all(self._stored.get(key, -1) >= offset for key, offset in needs)

    def take_changes(self) -> Mapping[Key, int] | None:
        """The marks to store, if any changed since the last call; then was_stored or
        not_stored says how it went."""
        if not self._changed:
            return None
        self._changed = False
        self._taken = dict(self._high)
        return self._taken

    def was_stored(self) -> None:
        """The marks last taken are stored."""
        self._stored = self._taken

    def not_stored(self) -> None:
        """The last changes could not be stored: offer them again."""
        self._changed = True


class MarkStore:
    """Stores an instance's marks (``store``: None for an instance without ZooKeeper,
    which has nothing to fail over with), one store at a time."""

    def __init__(self, marks: Marks, store: Store | None = None) -> None:
        self.marks = marks
        self.store = store
        self._under_way: asyncio.Task[None] | None = None
        self._failing = False

    async def store_changes(self) -> None:
        """Return once the marks seen before this call are stored (joining a store that
        started after they were seen); raise what a failed store raised."""
        if self._under_way is None or self._under_way.done():
            self._under_way = asyncio.get_running_loop().create_task(self._store_once())
            self._under_way.add_done_callback(_retrieved)
        # A waiter that gives up (its own timeout) must not cancel the others' store.
        await asyncio.shield(self._under_way)

    def soon(self) -> None:
        """Start storing the marks seen so far, without waiting: a write's mark, so that
        the fetch that will carry it finds the store done or under way (the ZooKeeper
        write overlaps the consumer's round trip instead of following it)."""
        if self.store is None or not self.marks.changed:
            return
        if self._under_way is None or self._under_way.done():
            self._under_way = asyncio.get_running_loop().create_task(self._store_once())
            self._under_way.add_done_callback(_retrieved)

    async def saw_and_stored(self, needs: Collection[tuple[Key, int]]) -> None:
        """Note the marks ``needs`` names, and return once each is stored."""
        for (cluster, topic, partition), offset in needs:
            self.marks.saw(cluster, topic, partition, offset)
        # Each round stores every mark seen when it starts: at most two rounds (the one
        # under way may have started before these were seen).
        while self.store is not None and not self.marks.covered(needs):
            await self.store_changes()

    async def _store_once(self) -> None:
        taken = self.marks.take_changes()
        if taken is None or self.store is None:
            return
        try:
            await self.store(taken)
        except Exception as exc:
            self.marks.not_stored()
            if not self._failing:  # once per outage, not once per waiting fetch
                log.warning("could not store high watermarks (%s); fetches wait for it", exc)
            self._failing = True
            raise
        self.marks.was_stored()
        if self._failing:
            log.warning("high watermarks stored again")
        self._failing = False


def _retrieved(task: asyncio.Task[None]) -> None:
    """A store nobody waits for any more: its failure was logged already."""
    if not task.cancelled():
        task.exception()


def encode(high: Mapping[Key, int]) -> bytes:
    body: dict[str, dict[str, dict[str, int]]] = {}
    for (cluster, topic, p), offset in sorted(high.items()):
        body.setdefault(cluster, {}).setdefault(topic, {})[str(p)] = offset
    return json.dumps(body, sort_keys=True).encode()


def merged(stored: Iterable[bytes]) -> dict[Key, int]:
    """The highest mark per partition over every instance's stored marks (unreadable
    ones skipped)."""
    found: dict[Key, int] = {}
    for raw in stored:
        try:
            body = json.loads(raw)
            items = [
                ((str(c), str(t), int(p)), int(o))
                for c, topics in body.items()
                for t, parts in topics.items()
                for p, o in parts.items()
            ]
        except (ValueError, AttributeError, TypeError):
            continue
        for key, offset in items:
            found[key] = max(offset, found.get(key, -1))
    return found
