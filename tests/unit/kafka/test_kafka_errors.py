import pytest
from confluent_kafka import KafkaError, KafkaException

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    AuthenticationError,
    AuthorizationError,
    ClusterUnreachableError,
    ConflictError,
    GroupActiveError,
    GroupNotFoundError,
    KafkaOperationError,
    TopicExistsError,
    TopicNotFoundError,
)
from kmigrate.kafka.clients import ErrorTrap
from kmigrate.kafka.errors import kafka_error_of, translate
from kmigrate.kafka.retry import is_transient

CLUSTER = ClusterConfig(
    name="source",
    bootstrap_servers="10.9.8.7:9092,10.9.8.6:9092",
    timeout_s=7,
    properties={"sasl.password": "hunter2-secret"},
)


def _exc(code: int, text: str | None = None) -> KafkaException:
    return KafkaException(KafkaError(code, text) if text is not None else KafkaError(code))


def _translate(exc, trap=None, action="describe topics", **names):
    return translate(exc, CLUSTER, trap or ErrorTrap(), action, **names)


# ------------------------------------------------------------------ unreachable


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError._TIMED_OUT])
def test_transport_and_timeout_mean_unreachable(code):
    error = _translate(_exc(code, "connection refused"))
    assert type(error) is ClusterUnreachableError


@pytest.mark.parametrize(
    "code",
    [KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError.REQUEST_TIMED_OUT,
     # a broker killed under a request: librdkafka drops its handle (seen in `groups
     # sync` against a one-broker target whose broker was killed; it exited instead of
     # waiting)
     KafkaError._DESTROY_BROKER],
)  # fmt: skip
def test_other_connection_failures_mean_unreachable(code):
    assert type(_translate(_exc(code, "x"))) is ClusterUnreachableError
    assert is_transient(KafkaError(code))


def test_unreachable_names_cluster_bootstrap_and_timeout():
    message = str(_translate(_exc(KafkaError._TRANSPORT, "connection refused")))
    assert "'source'" in message
    assert "10.9.8.7:9092,10.9.8.6:9092" in message
    assert "7s" in message
    assert "connection refused" in message


def test_unreachable_prefers_the_reason_the_trap_saw():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._TRANSPORT, "Connect to ipv4#10.9.8.7:9092 failed: refused"))
    message = str(_translate(_exc(KafkaError._TIMED_OUT, "Timed out"), trap))
    assert "Connect to ipv4#10.9.8.7:9092 failed: refused" in message


def test_unreachable_reason_is_one_short_line():
    trap = ErrorTrap()
    trap(
        KafkaError(
            KafkaError._TRANSPORT,
            "10.9.8.7:9092/bootstrap: Connect to ipv4#10.9.8.7:9092 failed:\n"
            "Connection refused (after 3ms in state CONNECT)",
        )
    )
    message = str(_translate(_exc(KafkaError._TIMED_OUT), trap))
    assert "\n" not in message
    assert "Connection refused" in message
    assert "after 3ms" not in message
    assert "/bootstrap:" not in message


def test_unreachable_message_does_not_contain_the_password():
    message = str(_translate(_exc(KafkaError._TRANSPORT, "x")))
    assert "hunter2-secret" not in message


# ------------------------------------------------------------------ authentication


def test_timeout_after_an_authentication_error_is_an_authentication_error():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._AUTHENTICATION, "SASL SCRAM authentication failed"))
    error = _translate(_exc(KafkaError._TIMED_OUT, "Timed out"), trap)
    assert type(error) is AuthenticationError
    assert "'source'" in str(error)
    assert "SASL SCRAM authentication failed" in str(error)


def test_transport_after_an_authentication_error_is_an_authentication_error():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._AUTHENTICATION, "bad creds"))
    assert type(_translate(_exc(KafkaError._TRANSPORT, "x"), trap)) is AuthenticationError


def test_only_the_last_trapped_error_counts():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._AUTHENTICATION, "bad creds"))
    trap(KafkaError(KafkaError._TRANSPORT, "refused"))
    assert type(_translate(_exc(KafkaError._TIMED_OUT), trap)) is ClusterUnreachableError


def test_timeout_after_a_transport_error_stays_unreachable():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._TRANSPORT, "refused"))
    assert type(_translate(_exc(KafkaError._TIMED_OUT), trap)) is ClusterUnreachableError


def test_authentication_trap_does_not_mask_a_specific_error():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._AUTHENTICATION, "bad creds"))
    error = _translate(_exc(KafkaError.UNKNOWN_TOPIC_OR_PART), trap, topic="orders")
    assert type(error) is TopicNotFoundError


@pytest.mark.parametrize(
    "code", [KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED]
)
def test_authentication_codes_mean_authentication_error(code):
    error = _translate(_exc(code, "rejected"))
    assert type(error) is AuthenticationError
    assert "sasl.password" in str(error)
    assert "hunter2-secret" not in str(error)


def test_non_kafka_exception_after_authentication_error_is_authentication_error():
    trap = ErrorTrap()
    trap(KafkaError(KafkaError._AUTHENTICATION, "bad creds"))
    assert type(_translate(RuntimeError("boom"), trap)) is AuthenticationError


# ------------------------------------------------------------------ authorization


def test_topic_authorization_failed_is_authorization_error_naming_the_action():
    error = _translate(_exc(KafkaError.TOPIC_AUTHORIZATION_FAILED), action="create topic")
    assert type(error) is AuthorizationError
    assert "'create topic'" in str(error)
    assert "TOPIC_AUTHORIZATION_FAILED" in str(error)
    assert "'source'" in str(error)


@pytest.mark.parametrize(
    "code",
    [KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED],
)
def test_other_authorization_failures_are_authorization_errors(code):
    assert type(_translate(_exc(code))) is AuthorizationError


# ------------------------------------------------------------------ topics and groups


def test_unknown_topic_is_topic_not_found_naming_the_topic():
    error = _translate(_exc(KafkaError.UNKNOWN_TOPIC_OR_PART), topic="orders")
    assert type(error) is TopicNotFoundError
    assert "'orders'" in str(error)
    assert "'source'" in str(error)


def test_topic_already_exists_is_topic_exists_error():
    error = _translate(_exc(KafkaError.TOPIC_ALREADY_EXISTS), topic="orders")
    assert type(error) is TopicExistsError
    assert "'orders'" in str(error)


def test_unknown_member_id_is_group_active_error_naming_the_group():
    error = _translate(_exc(KafkaError.UNKNOWN_MEMBER_ID), group="billing")
    assert type(error) is GroupActiveError
    assert "'billing'" in str(error)


@pytest.mark.parametrize("code", [KafkaError.REBALANCE_IN_PROGRESS, KafkaError.NON_EMPTY_GROUP])
def test_busy_group_codes_are_group_active_errors(code):
    assert type(_translate(_exc(code), group="g")) is GroupActiveError


def test_group_id_not_found_is_group_not_found():
    error = _translate(_exc(KafkaError.GROUP_ID_NOT_FOUND), group="billing")
    assert type(error) is GroupNotFoundError
    assert "'billing'" in str(error)


def test_invalid_replication_factor_is_a_conflict():
    error = _translate(_exc(KafkaError.INVALID_REPLICATION_FACTOR, "rf 5 > 3 brokers"))
    assert type(error) is ConflictError


def test_unmapped_kafka_error_is_kafka_operation_error_naming_action():
    error = _translate(_exc(KafkaError.INVALID_CONFIG, "bad value"), action="alter configs")
    assert type(error) is KafkaOperationError
    assert "alter configs" in str(error)
    assert "bad value" in str(error)


def test_non_kafka_exception_is_kafka_operation_error():
    error = _translate(ValueError("weird"), action="list groups")
    assert type(error) is KafkaOperationError
    assert "list groups" in str(error)
    assert "'source'" in str(error)


def test_kafka_exception_without_kafka_error_is_kafka_operation_error():
    assert type(_translate(KafkaException("just text"))) is KafkaOperationError


# ------------------------------------------------------------------ helpers


def test_kafka_error_of_unwraps_kafka_exception():
    inner = KafkaError(KafkaError._TRANSPORT, "x")
    assert kafka_error_of(KafkaException(inner)).code() == KafkaError._TRANSPORT
    assert kafka_error_of(RuntimeError("x")) is None


def test_error_trap_keeps_last_error_and_at_most_twenty():
    trap = ErrorTrap()
    assert trap.last is None
    assert trap.reason() is None
    for i in range(25):
        trap(KafkaError(KafkaError._TRANSPORT, f"e{i}"))
    assert trap.reason() == "e24"
    assert len(trap.seen) == 20
    assert trap.seen[0].str() == "e5"
