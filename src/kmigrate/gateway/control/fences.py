"""Write fences, one gateway instance's side (seed 002's promote, seed 000's smooth
migration without a guessed offset).

When a partition's newest migration is ``Migrating``, the instance parks new writes of
that partition, waits until the writes it already sent have been answered, and then
acknowledges the fence (its epoch) in ZooKeeper. The command that migrates waits for
every live instance's acknowledgement before it reads the origin's end offset: from
then on no write can reach the origin. When the record flips (or goes away), parked
writes go on to wherever the route now points. A write parked longer than ``park_s``
is answered with a retriable error (it was not written), well before the client's own
request timeout.

Everything runs on the instance's event loop; ``acknowledge`` is the one call that
leaves it (to ZooKeeper).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator

from kmigrate.gateway.control.routes import RoutingTable

log = logging.getLogger("kmigrate.gateway.fences")  # as before the move (logs)

Key = tuple[str, int]  # (topic, partition)
PARK_S = 5.0
ACK_TRIES = 10


class Fences:
    def __init__(
        self, acknowledge: Callable[[str, int, int], Awaitable[None]], park_s: float = PARK_S
    ) -> None:
        self._acknowledge = acknowledge
        self.park_s = park_s
        self._fenced: dict[Key, tuple[int, asyncio.Event]] = {}  # key -> (epoch, released)
        self._in_flight: Counter[Key] = Counter()
        self._idle: dict[Key, asyncio.Event] = {}

    def fenced(self, key: Key) -> bool:
        return key in self._fenced

    def follow(self, table: RoutingTable) -> None:
        """Apply a new routing table: fence what it fences, release what it no longer does."""
        wanted = {
            (topic, p): m.epoch
            for topic, route in table.topics.items()
            for p in route.migrations
            if (m := route.migrating(p)) is not None
        }
        for key in list(self._fenced):
            epoch, released = self._fenced[key]
            if wanted.get(key) != epoch:
                released.set()
                del self._fenced[key]
        for key, epoch in wanted.items():
            if key not in self._fenced:
                self._fenced[key] = (epoch, asyncio.Event())
                log.info("fencing writes of %s[%d] (migration epoch %d)", *key, epoch)
                task = asyncio.get_running_loop().create_task(self._acknowledge_when_idle(key))
                task.add_done_callback(_logged)

    async def _acknowledge_when_idle(self, key: Key) -> None:
        epoch, _ = self._fenced[key]
        while self._in_flight[key]:
            idle = self._idle.setdefault(key, asyncio.Event())
            idle.clear()
            await idle.wait()
        for attempt in range(ACK_TRIES):
            if self._fenced.get(key, (None,))[0] != epoch:
                return  # released (or fenced again) meanwhile
            try:
                await self._acknowledge(key[0], key[1], epoch)
            except Exception as exc:  # ZooKeeper briefly away: the migration waits
                log.info("acknowledging the fence of %s[%d] failed (%s); again", *key, exc)
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            log.info("acknowledged the fence of %s[%d] (epoch %d)", *key, epoch)
            return

    async def admit(self, keys: Iterable[Key]) -> None:
        """Wait (at most ``park_s``) until none of ``keys`` is fenced."""
        events = [self._fenced[k][1] for k in set(keys) if k in self._fenced]
        if events:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(e.wait() for e in events)), timeout=self.park_s
                )

    @contextlib.contextmanager
    def writing(self, keys: Iterable[Key]) -> Iterator[None]:
        """Count writes of ``keys`` as in flight while the block runs."""
        chosen = list(set(keys))
        self._in_flight.update(chosen)
        try:
            yield
        finally:
            self._in_flight.subtract(chosen)
            for key in chosen:
                if self._in_flight[key] <= 0:
                    del self._in_flight[key]
                    if key in self._idle:
                        self._idle[key].set()


def _logged(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not acknowledge a fence: %s", task.exception())
