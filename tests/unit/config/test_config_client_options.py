from pathlib import Path

from kmigrate.config import ClusterConfig, parse_settings

LIBRDKAFKA_ONLY = (
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "enable.ssl.certificate.verification",
)


def _cluster(properties=None, java_properties=None, bootstrap="10.0.0.1:9092,10.0.0.2:9092"):
    return ClusterConfig(
        name="c",
        bootstrap_servers=bootstrap,
        properties=properties or {},
        java_properties=java_properties or {},
    )


def _scram(password="pw", mechanism="SCRAM-SHA-512", **extra):
    return _cluster(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": "admin",
            "sasl.password": password,
            **extra,
        }
    )


# ------------------------------------------------------------------ librdkafka


def test_librdkafka_config_has_bootstrap_servers_and_unwrapped_properties():
    conf = _scram(password="s3cret").as_librdkafka()
    assert conf == {
        "bootstrap.servers": "10.0.0.1:9092,10.0.0.2:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin",
        "sasl.password": "s3cret",
    }
    assert all(isinstance(v, str) for v in conf.values())


def test_librdkafka_config_of_a_parsed_yaml_list_joins_servers():
    settings = parse_settings(
        "clusters:\n  s:\n    bootstrap_servers: [a:1, b:2]\n", Path("/x/clusters.yaml")
    )
    assert settings.cluster("s").as_librdkafka()["bootstrap.servers"] == "a:1,b:2"


# ------------------------------------------------------------------ java_properties
# Spark's Kafka connector (a Java client) is no longer used: the data plane's tasks read
# and write with confluent-kafka. java_properties still load (older files) and are
# held as secrets where their names say so, but reach no client.


def test_librdkafka_only_keys_reach_librdkafka():
    conf = _scram(**{"ssl.ca.location": "/ca.pem", "enable.ssl.certificate.verification": "false"})
    assert all(key in conf.as_librdkafka() for key in LIBRDKAFKA_ONLY)


def test_java_properties_are_not_given_to_librdkafka():
    cluster = _cluster(java_properties={"metadata.max.age.ms": "1000"})
    assert "metadata.max.age.ms" not in cluster.as_librdkafka()
