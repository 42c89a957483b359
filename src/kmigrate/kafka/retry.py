"""Which Kafka conditions pass on their own.

Brokers restart, leaders move, coordinators load: every Kafka client retries these, and
so does kmigrate, through this one module:

* :func:`is_transient` classifies a librdkafka error (the admin layer turns transient
  ones into :class:`ClusterUnavailableError`, the data plane's tasks report them as
  ``unavailable``);
* ``kmigrate.waiting.WaitPolicy`` runs one step of a long-running process (a mirror
  batch, a groups sync round) again and again while it fails with
  ``ClusterUnavailableError``, and gives up past its deadline.

Everything else (authorization, a foreign write, retention loss, a topic deleted, a
record too large, a wrong configuration) is not transient: it propagates at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import KafkaError

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
        KafkaError._DESTROY_BROKER,  # the broker a request was for went away
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
    KafkaError._DESTROY_BROKER: "broker went away",
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
