"""Where an idempotent producer's sequence starts on a backend. Pure (on the event loop).

A broker checks every batch's sequence number against the last one it holds of that
producer on that partition, except for a producer it does not know there: it takes the
first batch it is given, whatever its sequence (KIP-360). Through a broker that is
harmless: one connection's requests are handled one after the other, so the first batch
to arrive is the first one sent. Through the gateway it is not. After a partition moved
(the producer is new to the target), at a producer's start (its first batches refused
while a backend's coordinator loads) or after an instance died, a later batch can reach
the backend before an earlier one that was refused or is being retried; the broker takes
it, answers the earlier one OUT_OF_ORDER_SEQUENCE_NUMBER, and the client bumps its epoch
and writes the earlier records after the later ones.

So the gateway lets a producer's first write to a partition of a backend through only
with the sequence that must come next: 0 for a producer new to the partition, or one past
the last sequence the origin holds of it when the partition moved (the move's writers).
Later batches wait until that first write is settled. A batch with a later sequence, of a
producer the backend does not know (its partition leader's DescribeProducers says so), is
answered NOT_LEADER_OR_FOLLOWER: not written, retriable, and the client resends its
earlier batches first, in order. Once the backend holds a write, it checks every later
one itself.

A producer the backend forgot (idle past producer.id.expiration.ms, its records deleted)
comes back at a later sequence and no earlier batch ever comes: after GIVE_UP_S of such
refusals its batch goes through, as a broker would have taken it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

log = logging.getLogger("kmigrate.gateway.handlers")  # as the other serving modules

# (backend cluster, topic, partition, client producer id, client epoch)
Key = tuple[str, str, int, int, int]
SEQUENCE_LIMIT = 2**31  # sequence numbers wrap to 0 after Int.MAX
GIVE_UP_S = 30.0  # longer than any client's retries of its earlier batches take
WAIT_S = 30.0  # at most this long behind a first write still in flight
REMEMBERED = 200_000  # (producer, partition) pairs known to hold state, least recent dropped


class Verdict(enum.Enum):
    OPEN = "the first write: forward it, then settle it"
    PASS = "the backend checks it"
    ASK = "ask the backend whether it knows the producer there"
    REFUSE = "an earlier batch must come first"


def next_sequence(last: int | None) -> int:
    """The sequence that follows ``last`` (None: nothing written yet)."""
    return 0 if last is None else (last + 1) % SEQUENCE_LIMIT


class FirstWrites:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: OrderedDict[Key, None] = OrderedDict()
        self._opening: dict[Key, asyncio.Future[bool]] = {}
        self._refused_since: dict[Key, float] = {}

    async def settled(self, keys: Iterable[Key]) -> None:
        """Wait (at most WAIT_S) until no first write of ``keys`` is in flight."""
        pending = [f for k in set(keys) if (f := self._opening.get(k)) is not None]
        if pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(asyncio.shield(f) for f in pending)), WAIT_S
                )

    def decide(self, key: Key, sequence: int, expected: int) -> Verdict:
        """What to do with a batch of ``key`` starting at ``sequence``; call after
        ``settled`` with no await in between. OPEN must be followed by ``done``."""
        if key in self._known:
            self._known.move_to_end(key)
            return Verdict.PASS
        if key in self._opening:
            return Verdict.REFUSE  # its first write is still unanswered after WAIT_S
        if sequence == expected:
            return self._open(key)
        return Verdict.ASK

    def told(self, key: Key, backend_knows: bool) -> Verdict:
        """The verdict once the backend said whether it holds the producer's state."""
        if backend_knows:
            self._remember(key)
            return Verdict.PASS
        if key in self._opening:
            return Verdict.REFUSE
        since = self._refused_since.setdefault(key, self._clock())
        if self._clock() - since < GIVE_UP_S:
            return Verdict.REFUSE
        log.warning(
            "%s[%d] on %s: producer %d (epoch %d) resumes at a later sequence with no "
            "earlier batch for %gs (its state expired on the backend?); letting it through",
            key[1], key[2], key[0], key[3], key[4], GIVE_UP_S,
        )  # fmt: skip
        return self._open(key)

    def done(self, key: Key, written: bool) -> None:
        """The answer to an OPEN write: ``written`` when the backend holds it."""
        future = self._opening.pop(key, None)
        if future is not None and not future.done():
            future.set_result(written)
        if written:
            self._remember(key)

    def _open(self, key: Key) -> Verdict:
        self._opening[key] = asyncio.get_running_loop().create_future()
        return Verdict.OPEN

    def _remember(self, key: Key) -> None:
        self._refused_since.pop(key, None)
        self._known[key] = None
        self._known.move_to_end(key)
        while len(self._known) > REMEMBERED:
            self._known.popitem(last=False)
