"""Which Kafka conditions pass on their own, and how a long-running process waits them out.

Brokers restart, leaders move, coordinators load: every Kafka client retries these, and
so does kmigrate, through this one module:

* :func:`is_transient` classifies a librdkafka error (the admin layer turns transient
  ones into :class:`ClusterUnavailableError`, the data plane's tasks report them as
  ``unavailable``);
* :class:`WaitPolicy` runs one step of a long-running process (a mirror batch, a groups
  sync round) again and again while it fails with ``ClusterUnavailableError``, with
  bounded exponential backoff and full jitter, says once when waiting starts and once
  when it ends, and gives up with :class:`OutageTooLongError` past its deadline.

Everything else (authorization, a foreign write, retention loss, a topic deleted, a
record too large, a wrong configuration) is not transient: it propagates at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from confluent_kafka import KafkaError

from kmigrate.errors import ClusterUnavailableError, OutageTooLongError

T = TypeVar("T")

# Broker answers that mean "not now": leadership or coordination is moving, a broker is
# restarting or catching up. UNKNOWN_TOPIC_OR_PART is left out on purpose: a deleted
# topic must stop a process; the admin layer retries it briefly where a new topic's
# metadata is still propagating.
TRANSIENT_BROKER_CODES = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_CONTROLLER,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.KAFKA_STORAGE_ERROR,
        KafkaError.STALE_BROKER_EPOCH,
        KafkaError.THROTTLING_QUOTA_EXCEEDED,
    }
)
# librdkafka's own conditions while it cannot reach a broker (connection refused,
# every broker down, a request that timed out, a leader lookup that found none).
TRANSIENT_CLIENT_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._WAIT_COORD,
        KafkaError._RESOLVE,
        KafkaError._NOENT,
    }
)
# Never transient, whatever librdkafka's retriable() flag says.
NEVER_TRANSIENT = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_CONFIG,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.TOPIC_DELETION_DISABLED,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError.INVALID_RECORD,
        KafkaError.UNSUPPORTED_VERSION,
        KafkaError._FATAL,
        KafkaError._GAPLESS_GUARANTEE,
        KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,
        KafkaError.INVALID_PRODUCER_EPOCH,
    }
)

_CONDITIONS = {
    KafkaError.NOT_LEADER_FOR_PARTITION: "leader moved",
    KafkaError.LEADER_NOT_AVAILABLE: "no leader",
    KafkaError._NOENT: "no leader",
    KafkaError.FENCED_LEADER_EPOCH: "leader epoch changing",
    KafkaError.UNKNOWN_LEADER_EPOCH: "leader epoch changing",
    KafkaError.NOT_COORDINATOR: "group coordinator moving",
    KafkaError.COORDINATOR_NOT_AVAILABLE: "no group coordinator",
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS: "group coordinator loading",
    KafkaError._WAIT_COORD: "no group coordinator",
    KafkaError.NOT_ENOUGH_REPLICAS: "not enough in-sync replicas",
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "not enough in-sync replicas",
    KafkaError._TRANSPORT: "broker connection failed",
    KafkaError._ALL_BROKERS_DOWN: "no broker reachable",
    KafkaError._RESOLVE: "broker address does not resolve",
    KafkaError._TIMED_OUT: "request timed out",
    KafkaError._TIMED_OUT_QUEUE: "request timed out",
    KafkaError._MSG_TIMED_OUT: "no acknowledgement in time",
    KafkaError.REQUEST_TIMED_OUT: "request timed out",
}


SHOWN_POLL_S = 0.2


def until_shown(shown: Callable[[], bool], timeout_s: float) -> None:
    """Ask ``shown`` until it holds or ``timeout_s`` passed: a change a cluster
    acknowledged, read back. On KRaft the controller answers once the change is
    committed, and a broker describes it once applied, a moment later."""
    deadline = time.monotonic() + timeout_s
    while not shown() and time.monotonic() < deadline:
        time.sleep(SHOWN_POLL_S)


def is_transient(error: KafkaError | None) -> bool:
    """True for a condition that passes on its own (retry); False for one that needs a
    human or means data would be lost or repeated (stop)."""
    if error is None:
        return False
    code = error.code()
    if code in NEVER_TRANSIENT or error.fatal():
        return False
    return code in TRANSIENT_BROKER_CODES or code in TRANSIENT_CLIENT_CODES or error.retriable()


def condition_of(error: KafkaError, where: str | None = None) -> str:
    """A few words for a status line: "no leader for orders[3]"."""
    what = _CONDITIONS.get(error.code(), error.name().lower().lstrip("_").replace("_", " "))
    return f"{what} for {where}" if where else what


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


def duration_text(seconds: float) -> str:
    """90 -> "1m30s", 3600 -> "1h", 4.2 -> "4s"."""
    total = max(round(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    parts.append(f"{secs}s" if secs or not (hours or minutes) else "")
    return "".join(parts)


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
