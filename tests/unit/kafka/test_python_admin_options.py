"""kafka-python (quotas, reassignments) logs in as clusters.yaml says: SASL PLAIN or SCRAM,
TLS with the same CA, certificate and key; a mechanism it cannot do is one clear line."""

from __future__ import annotations

import pytest

from kmigrate.config import ClusterConfig
from kmigrate.errors import ConfigError
from kmigrate.kafka.python_admin import KafkaPythonAdmin, _tls_options


def test_tls_properties_become_kafka_pythons():
    conf = {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.certificate.location": "/etc/kafka/me.pem",
        "ssl.key.location": "/etc/kafka/me.key",
        "ssl.key.password": "secret",
    }
    assert _tls_options(conf) == {
        "ssl_cafile": "/etc/kafka/ca.pem",
        "ssl_certfile": "/etc/kafka/me.pem",
        "ssl_keyfile": "/etc/kafka/me.key",
        "ssl_password": "secret",
        "ssl_check_hostname": True,
    }
    unchecked = _tls_options({"ssl.endpoint.identification.algorithm": "none"})
    assert unchecked == {"ssl_check_hostname": False}


def test_a_mechanism_kafka_python_cannot_log_in_with_is_refused_in_one_line():
    cluster = ClusterConfig(
        name="corp",
        bootstrap_servers="127.0.0.1:1",
        properties={"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
    )
    with pytest.raises(
        ConfigError,
        match="log in with SASL PLAIN or SCRAM-SHA-256 or SCRAM-SHA-512, not OAUTHBEARER",
    ):
        KafkaPythonAdmin(cluster)


def test_a_broker_that_left_the_metadata_is_an_outage_to_wait_out_not_a_failure():
    from kafka.errors import IllegalArgumentError, UnknownBrokerIdError

    from kmigrate.errors import ClusterUnavailableError, KafkaOperationError

    admin = object.__new__(KafkaPythonAdmin)  # no cluster contacted
    admin.cluster = ClusterConfig(name="c", bootstrap_servers="127.0.0.1:1")
    admin._connected = None

    def gone() -> None:
        raise UnknownBrokerIdError(2)  # kafka-python: the controller it knew restarted

    def wrong() -> None:
        raise IllegalArgumentError("bad")

    with pytest.raises(ClusterUnavailableError, match="did not complete"):
        admin._call("altering partition reassignments", gone)
    with pytest.raises(KafkaOperationError, match="failed"):
        admin._call("altering partition reassignments", wrong)


class _Client:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_failure_that_passes_drops_the_client_so_the_next_call_bootstraps_afresh():
    """After every broker restarted, one kafka-python client kept failing on the
    controller it had learned; a waited-out outage must end with a new client."""
    from kafka.errors import KafkaConnectionError, TopicAlreadyExistsError

    from kmigrate.errors import ClusterUnavailableError, KafkaOperationError

    made: list[_Client] = []
    admin = object.__new__(KafkaPythonAdmin)  # no cluster contacted
    admin.cluster = ClusterConfig(name="c", bootstrap_servers="127.0.0.1:1")
    admin._connect = lambda: made.append(_Client()) or made[-1]  # type: ignore[method-assign]
    admin._connected = admin._connect()

    def refused() -> None:
        raise KafkaConnectionError("connection refused")

    def exists() -> None:
        raise TopicAlreadyExistsError("t")

    first = admin._client
    with pytest.raises(KafkaOperationError):
        admin._call("creating", exists)
    assert admin._client is first and not first.closed  # a refusal keeps the connection
    with pytest.raises(ClusterUnavailableError, match="KafkaConnectionError"):
        admin._call("listing partition reassignments", refused)
    assert first.closed
    assert admin._client is not first and len(made) == 2
