"""How a long-running process waits out an outage of a cluster.

Brokers restart, leaders move, coordinators load. A long-running process (a mirror
batch, a groups sync round, a reassignment, an ensemble move) runs each step through a
:class:`WaitPolicy`: again and again while it fails with ``ClusterUnavailableError``
(which the adapters raise for conditions that pass on their own: see
``kafka/retry.py:is_transient``), with bounded exponential backoff and full jitter,
saying once when waiting starts and once when it ends, and giving up with
:class:`OutageTooLongError` past its deadline. It knows no client library: any adapter's
``ClusterUnavailableError`` is waited out the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from kmigrate.durations import duration_text
from kmigrate.errors import ClusterUnavailableError, OutageTooLongError

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt n waits uniformly in [floor, cap_n],
    cap_n = min(first_s * 2**n, max_s), so many waiting processes do not retry in step."""

    first_s: float = 0.25
    max_s: float = 5.0
    floor_s: float = 0.05

    def delay(self, attempt: int, rng: random.Random) -> float:
        cap = min(self.first_s * 2 ** min(attempt, 30), self.max_s)
        return rng.uniform(min(self.floor_s, cap), cap)


@dataclass(frozen=True)
class Outage:
    """A cluster that stopped answering usefully: since when, and why (latest reason)."""

    cluster: str
    condition: str
    since: float  # wall clock, seconds since the epoch
    started: float  # monotonic clock, for the deadline

    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.since))


class WaitAbandoned(Exception):
    """The process was asked to stop while it waited; nothing failed."""


class WaitPolicy:
    """Runs a step until it succeeds, waiting out ``ClusterUnavailableError``.

    ``on_wait(outage)`` is called when waiting starts and whenever the reason changes
    cluster; ``on_recover(outage)`` once it ends. ``pause(seconds)`` sleeps between
    attempts (a process heartbeats there) and returns False when the process should
    stop, which ends the wait with :class:`WaitAbandoned`. Past ``max_unavailable_s``
    of one outage the step's error becomes :class:`OutageTooLongError`, whose message
    names the cluster, the condition, how long it lasted and ``resume_hint``.
    """

    def __init__(
        self,
        max_unavailable_s: float,
        *,
        on_wait: Callable[[Outage], None] = lambda _o: None,
        on_recover: Callable[[Outage], None] = lambda _o: None,
        pause: Callable[[float], bool] | None = None,
        roles: Mapping[str, str] | None = None,
        resume_hint: str = "",
        backoff: Backoff = Backoff(),
        rng: random.Random | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.max_unavailable_s = max_unavailable_s
        self.on_wait = on_wait
        self.on_recover = on_recover
        self.pause = pause or _sleep
        self.roles = dict(roles or {})
        self.resume_hint = resume_hint
        self.backoff = backoff
        self.rng = rng or random.Random()
        self.monotonic = monotonic
        self.wall = wall
        self.outage: Outage | None = None

    def run(self, step: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                result = step()
            except ClusterUnavailableError as exc:
                self._unavailable(exc)
                if not self.pause(self.backoff.delay(attempt, self.rng)):
                    raise WaitAbandoned() from None
                attempt += 1
                continue
            if self.outage is not None:
                ended, self.outage = self.outage, None
                self.on_recover(ended)
            return result

    def who(self, cluster: str) -> str:
        role = self.roles.get(cluster)
        return f"{role} cluster '{cluster}'" if role else f"cluster '{cluster}'"

    def lasted(self, outage: Outage) -> float:
        return self.monotonic() - outage.started

    def _unavailable(self, exc: ClusterUnavailableError) -> None:
        previous = self.outage
        if previous is None:
            self.outage = Outage(exc.cluster, exc.condition, self.wall(), self.monotonic())
        else:
            self.outage = replace(previous, cluster=exc.cluster, condition=exc.condition)
        outage = self.outage
        if self.lasted(outage) > self.max_unavailable_s:
            hint = f"; {self.resume_hint}" if self.resume_hint else ""
            raise OutageTooLongError(
                f"{self.who(outage.cluster)} unavailable for {duration_text(self.lasted(outage))}"
                f" (since {outage.clock()}, longer than the allowed "
                f"{duration_text(self.max_unavailable_s)}): {outage.condition}{hint}"
            ) from None
        if previous is None or previous.cluster != outage.cluster:
            self.on_wait(outage)


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return True
