from pathlib import Path

import pytest

from kmigrate.config import ClusterConfig, parse_settings
from kmigrate.errors import ConfigError

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
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


# ------------------------------------------------------------------ spark: basics


def test_spark_options_set_kafka_bootstrap_servers():
    options = _cluster().as_spark_options()
    assert options["kafka.bootstrap.servers"] == "10.0.0.1:9092,10.0.0.2:9092"


def test_every_spark_option_is_prefixed_with_kafka():
    options = _scram(**{"ssl.ca.location": "/ca.pem"}).as_spark_options()
    assert options
    assert all(key.startswith("kafka.") for key in options)


def test_spark_options_pass_through_java_compatible_properties():
    options = _scram(**{"client.id": "mover"}).as_spark_options()
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.client.id"] == "mover"


def test_spark_options_without_sasl_have_no_jaas_config():
    options = _cluster({"security.protocol": "PLAINTEXT"}).as_spark_options()
    assert "kafka.sasl.jaas.config" not in options
    assert options["kafka.security.protocol"] == "PLAINTEXT"


def test_librdkafka_only_keys_are_not_passed_to_spark():
    cluster = _scram(
        **{"ssl.ca.location": "/etc/ca.pem", "enable.ssl.certificate.verification": "false"}
    )
    options = cluster.as_spark_options()
    for key in LIBRDKAFKA_ONLY:
        assert f"kafka.{key}" not in options
        assert key not in options


def test_librdkafka_only_keys_still_reach_librdkafka():
    conf = _scram(**{"ssl.ca.location": "/etc/ca.pem"}).as_librdkafka()
    assert conf["ssl.ca.location"] == "/etc/ca.pem"
    assert conf["sasl.username"] == "admin"


# ------------------------------------------------------------------ spark: SASL login


def test_scram_sha_512_yields_scram_jaas_config_with_quoted_credentials():
    options = _scram(password="pw-123").as_spark_options()
    assert options["kafka.sasl.jaas.config"] == (
        f'{SCRAM_MODULE} required username="admin" password="pw-123";'
    )


def test_scram_sha_256_also_uses_scram_login_module():
    options = _scram(mechanism="SCRAM-SHA-256").as_spark_options()
    assert options["kafka.sasl.jaas.config"].startswith(f"{SCRAM_MODULE} required ")


def test_mechanism_is_matched_case_insensitively():
    options = _scram(mechanism="scram-sha-512").as_spark_options()
    assert options["kafka.sasl.jaas.config"].startswith(f"{SCRAM_MODULE} required ")


def test_plain_yields_plain_login_module():
    options = _scram(mechanism="PLAIN", password="pw").as_spark_options()
    assert options["kafka.sasl.jaas.config"] == (
        f'{PLAIN_MODULE} required username="admin" password="pw";'
    )


def test_password_with_double_quote_is_escaped_in_jaas_config():
    options = _scram(password='a"b').as_spark_options()
    assert options["kafka.sasl.jaas.config"] == (
        f'{SCRAM_MODULE} required username="admin" password="a\\"b";'
    )


def test_password_with_backslash_is_escaped_in_jaas_config():
    options = _scram(password="a\\b").as_spark_options()
    assert options["kafka.sasl.jaas.config"] == (
        f'{SCRAM_MODULE} required username="admin" password="a\\\\b";'
    )


def test_password_with_backslash_and_quote_cannot_end_the_quoted_value():
    options = _scram(password='x\\"; evil=1').as_spark_options()
    assert options["kafka.sasl.jaas.config"] == (
        f'{SCRAM_MODULE} required username="admin" password="x\\\\\\"; evil=1";'
    )


def test_username_is_escaped_too():
    cluster = _cluster({"sasl.mechanism": "PLAIN", "sasl.username": 'us"er', "sasl.password": "p"})
    assert 'username="us\\"er"' in cluster.as_spark_options()["kafka.sasl.jaas.config"]


def test_username_without_password_gets_an_empty_password():
    cluster = _cluster({"sasl.mechanism": "PLAIN", "sasl.username": "u"})
    assert cluster.as_spark_options()["kafka.sasl.jaas.config"].endswith(
        'username="u" password="";'
    )


def test_explicit_jaas_config_in_properties_is_kept():
    jaas = f'{PLAIN_MODULE} required username="other" password="x";'
    cluster = _cluster(
        {
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "pw",
            "sasl.jaas.config": jaas,
        }
    )
    assert cluster.as_spark_options()["kafka.sasl.jaas.config"] == jaas


def test_username_with_unsupported_mechanism_is_a_config_error():
    cluster = _cluster({"sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"})
    with pytest.raises(ConfigError, match="GSSAPI"):
        cluster.as_spark_options()


def test_username_without_mechanism_is_a_config_error_saying_unset():
    cluster = _cluster({"sasl.username": "u", "sasl.password": "p"})
    with pytest.raises(ConfigError, match=r"\(unset\)"):
        cluster.as_spark_options()


def test_java_jaas_config_resolves_a_mechanism_without_username_login():
    # The error for an unsupported mechanism tells the user to set
    # java_properties.sasl.jaas.config; doing so must make the options buildable.
    jaas = 'org.example.CustomLoginModule required user="u";'
    cluster = _cluster(
        {"sasl.mechanism": "OAUTHBEARER", "sasl.username": "u", "sasl.password": "p"},
        java_properties={"sasl.jaas.config": jaas},
    )
    assert cluster.as_spark_options()["kafka.sasl.jaas.config"] == jaas


# ------------------------------------------------------------------ spark: TLS


def test_ssl_ca_location_becomes_a_pem_truststore():
    options = _cluster(
        {"security.protocol": "SSL", "ssl.ca.location": "/etc/kafka/ca.pem"}
    ).as_spark_options()
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert options["kafka.ssl.truststore.location"] == "/etc/kafka/ca.pem"
    assert "kafka.ssl.ca.location" not in options


def test_no_truststore_without_ssl_ca_location():
    options = _cluster({"security.protocol": "SSL"}).as_spark_options()
    assert "kafka.ssl.truststore.type" not in options
    assert "kafka.ssl.truststore.location" not in options


def test_endpoint_identification_none_becomes_empty_for_java():
    options = _cluster({"ssl.endpoint.identification.algorithm": "none"}).as_spark_options()
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""


def test_endpoint_identification_https_is_kept():
    options = _cluster({"ssl.endpoint.identification.algorithm": "https"}).as_spark_options()
    assert options["kafka.ssl.endpoint.identification.algorithm"] == "https"


def test_client_certificate_and_key_are_inlined_as_pem_keystore(tmp_path):
    cert = tmp_path / "client.crt"
    key = tmp_path / "client.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n")
    options = _cluster(
        {"ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    ).as_spark_options()
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.keystore.certificate.chain"] == cert.read_text()
    assert options["kafka.ssl.keystore.key"] == key.read_text()
    assert "kafka.ssl.certificate.location" not in options
    assert "kafka.ssl.key.location" not in options


def test_unreadable_client_certificate_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "missing.crt"
    key = tmp_path / "client.key"
    key.write_text("KEY")
    cluster = _cluster({"ssl.certificate.location": str(missing), "ssl.key.location": str(key)})
    with pytest.raises(ConfigError, match=r"missing\.crt"):
        cluster.as_spark_options()


# ------------------------------------------------------------------ spark: java_properties


def test_java_properties_override_translated_ones():
    cluster = _cluster(
        {"security.protocol": "SASL_PLAINTEXT", "ssl.ca.location": "/ca.pem"},
        java_properties={
            "security.protocol": "SASL_SSL",
            "ssl.truststore.type": "JKS",
            "ssl.truststore.location": "/trust.jks",
        },
    )
    options = cluster.as_spark_options()
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.ssl.truststore.type"] == "JKS"
    assert options["kafka.ssl.truststore.location"] == "/trust.jks"


def test_java_properties_override_generated_jaas_config():
    jaas = f'{PLAIN_MODULE} required username="spark" password="other";'
    cluster = _cluster(
        {"sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "pw"},
        java_properties={"sasl.jaas.config": jaas},
    )
    assert cluster.as_spark_options()["kafka.sasl.jaas.config"] == jaas


def test_java_properties_add_java_only_settings_and_unwrap_secrets():
    cluster = _cluster(
        java_properties={
            "ssl.truststore.password": "trustpw",
            "metadata.max.age.ms": "1000",
        }
    )
    options = cluster.as_spark_options()
    assert options["kafka.ssl.truststore.password"] == "trustpw"
    assert options["kafka.metadata.max.age.ms"] == "1000"
    assert "trustpw" not in repr(cluster)


def test_java_properties_are_not_given_to_librdkafka():
    cluster = _cluster(java_properties={"metadata.max.age.ms": "1000"})
    assert "metadata.max.age.ms" not in cluster.as_librdkafka()


def test_bootstrap_servers_come_from_the_cluster_even_if_java_properties_set_them():
    cluster = _cluster(java_properties={"bootstrap.servers": "wrong:1"}, bootstrap="right:9092")
    assert cluster.as_spark_options()["kafka.bootstrap.servers"] == "right:9092"


def test_spark_options_from_parsed_yaml_end_to_end(monkeypatch):
    monkeypatch.setenv("KMT_SPARK_PW", 'p"w\\x')
    settings = parse_settings(
        """\
clusters:
  source:
    bootstrap_servers:
      - 127.0.0.1:9092
      - 127.0.0.1:9093
    properties:
      security.protocol: SASL_PLAINTEXT
      sasl.mechanism: SCRAM-SHA-512
      sasl.username: admin
      sasl.password: ${KMT_SPARK_PW}
""",
        Path("/x/clusters.yaml"),
    )
    options = settings.cluster("source").as_spark_options()
    assert options == {
        "kafka.bootstrap.servers": "127.0.0.1:9092,127.0.0.1:9093",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            f'{SCRAM_MODULE} required username="admin" password="p\\"w\\\\x";'
        ),
    }
