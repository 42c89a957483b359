"""Translate confluent-kafka failures into kmigrate's errors, once, at this boundary."""

from __future__ import annotations

import re

from confluent_kafka import KafkaError, KafkaException

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    AuthenticationError,
    AuthorizationError,
    ClusterUnavailableError,
    ClusterUnreachableError,
    ConflictError,
    GroupActiveError,
    GroupNotFoundError,
    KafkaOperationError,
    KMigrateError,
    TopicExistsError,
    TopicNotFoundError,
)
from kmigrate.kafka.clients import ErrorTrap
from kmigrate.kafka.retry import condition_of, is_transient

_UNREACHABLE = {
    KafkaError._TRANSPORT,
    # a request to a broker that went away, whose handle librdkafka dropped meanwhile
    KafkaError._DESTROY_BROKER,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._RESOLVE,
    KafkaError.REQUEST_TIMED_OUT,
}
_AUTHN = {
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.ILLEGAL_SASL_STATE,
    KafkaError.UNSUPPORTED_SASL_MECHANISM,
}
_AUTHZ = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
_GROUP_ACTIVE = {
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.NON_EMPTY_GROUP,
}


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def translate(
    exc: BaseException,
    cluster: ClusterConfig,
    trap: ErrorTrap,
    action: str,
    *,
    topic: str | None = None,
    group: str | None = None,
    where: str | None = None,
) -> KMigrateError:
    """The kmigrate error for a failed ``action`` (e.g. "describe topics") on ``cluster``.

    ``where`` (e.g. "orders[3]") names what the request was about, for the condition of
    a transient failure: "no leader for orders[3]".
    """
    error = kafka_error_of(exc)
    # A timeout often hides the real cause, which librdkafka reported through error_cb.
    if error is None or error.code() in _UNREACHABLE:
        cause = trap.last if trap.last is not None and trap.last.code() in _AUTHN else None
        if cause is not None:
            error = cause
    if error is None:
        return KafkaOperationError(f"{action} on cluster '{cluster.name}' failed: {exc}")
    return _from_code(error, cluster, trap, action, topic=topic, group=group, where=where)


def _from_code(
    error: KafkaError,
    cluster: ClusterConfig,
    trap: ErrorTrap,
    action: str,
    *,
    topic: str | None,
    group: str | None,
    where: str | None,
) -> KMigrateError:
    code, name = error.code(), cluster.name
    if code in _UNREACHABLE:
        why = _short(trap.reason() or error.str())
        return ClusterUnreachableError(
            f"cannot reach cluster '{name}' at {cluster.bootstrap_servers} within "
            f"{cluster.timeout_s:g}s ({why}); check bootstrap_servers in the config "
            "and that the brokers are running",
            cluster=name,
            condition=f"{condition_of(error, where)} ({why})",
        )
    if code in _AUTHN:
        return AuthenticationError(
            f"cluster '{name}' rejected kmigrate's credentials ({_short(error.str())}); "
            "check sasl.mechanism, sasl.username and sasl.password for this cluster"
        )
    if code in _AUTHZ:
        return AuthorizationError(
            f"cluster '{name}' denied '{action}' ({error.name()}); grant kmigrate's principal "
            "the needed ACLs or use an admin principal"
        )
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return TopicNotFoundError(f"topic '{topic or '?'}' does not exist on cluster '{name}'")
    if code == KafkaError.TOPIC_ALREADY_EXISTS:
        return TopicExistsError(f"topic '{topic or '?'}' already exists on cluster '{name}'")
    if code == KafkaError.GROUP_ID_NOT_FOUND:
        return GroupNotFoundError(f"consumer group '{group or '?'}' does not exist on '{name}'")
    if code in _GROUP_ACTIVE:
        return GroupActiveError(
            f"consumer group '{group or '?'}' has active members on cluster '{name}'; "
            "stop its consumers first"
        )
    if is_transient(error):
        return ClusterUnavailableError(
            f"{action} on cluster '{name}' failed: {_short(error.str())}",
            cluster=name,
            condition=condition_of(error, where or topic or (group and f"group {group}")),
        )
    if code == KafkaError.INVALID_REPLICATION_FACTOR:
        return ConflictError(f"{action} on cluster '{name}': {_short(error.str())}")
    return KafkaOperationError(f"{action} on cluster '{name}' failed: {_short(error.str())}")


_BROKER_PREFIX = re.compile(r"^\S+/(bootstrap|\d+): ")
_TIMING_SUFFIX = re.compile(r"\s*\(after \d+ms in state \w+\)$")


def _short(text: str) -> str:
    """librdkafka messages can span lines and carry internals; a user sees one short line."""
    text = " ".join(text.split())
    return _TIMING_SUFFIX.sub("", _BROKER_PREFIX.sub("", text))
