"""Client configuration is configuration: Java names, missing files, librdkafka's refusals
and unreadable files are ConfigErrors (exit 2) naming the cluster and what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.client_properties import JAVA_NAMES, check_files, check_names, refusal
from kmigrate.config import ClusterConfig, load_settings, parse_settings, read_user_file
from kmigrate.errors import ConfigError
from kmigrate.kafka.clients import ErrorTrap, admin_client, producer


def _yaml(*properties: str) -> str:
    lines = "".join(f"      {p}\n" for p in properties)
    return f"clusters:\n  a:\n    bootstrap_servers: 127.0.0.1:1\n    properties:\n{lines}"


def _cluster(**properties: str) -> ClusterConfig:
    return ClusterConfig(name="a", bootstrap_servers="127.0.0.1:1", properties=properties)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("sasl.jaas.config", "sasl.mechanism"),
        ("ssl.truststore.location", "ssl.ca.location"),
        ("ssl.truststore.password", "ssl.ca.location"),
        ("ssl.keystore.type", "ssl.certificate.location + ssl.key.location"),
        ("ssl.keystore.key", "ssl.key.pem"),
        ("sasl.login.callback.handler.class", "sasl.oauthbearer.method"),
        ("value.deserializer", "copies bytes"),
    ],
)
def test_java_names_are_refused_at_load_with_the_librdkafka_equivalent(
    name: str, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_settings(_yaml(f"{name}: secret-value-1"), Path("c.yaml"))
    message = str(refused.value)
    assert f"c.yaml: cluster 'a': '{name}' is a Java client property" in message
    assert says in message
    assert "secret-value-1" not in message


def test_every_java_name_has_a_hint() -> None:
    assert all(hint for hint in JAVA_NAMES.values())
    check_names("x", {"sasl.mechanism": "PLAIN", "ssl.ca.location": "probe"})


def test_java_names_in_java_properties_are_fine() -> None:
    text = _yaml("security.protocol: SSL") + "    java_properties:\n      sasl.jaas.config: x\n"
    assert parse_settings(text, Path("c.yaml")).clusters["a"].java_properties


def test_an_empty_endpoint_identification_says_none() -> None:
    with pytest.raises(ConfigError, match="librdkafka takes 'none'"):
        parse_settings(_yaml("ssl.endpoint.identification.algorithm: ''"), Path("c.yaml"))


def test_gateway_principal_overrides_are_checked_too() -> None:
    text = _yaml("security.protocol: PLAINTEXT") + (
        "gateway:\n  group_home: a\n  zookeeper: 127.0.0.1:2181\n"
        "  principals:\n    alice:\n      a:\n        ssl.truststore.location: /x\n"
    )
    with pytest.raises(ConfigError, match="gateway principal 'alice' on 'a'"):
        parse_settings(text, Path("c.yaml"))


def test_a_missing_file_is_named_when_the_cluster_is_used(tmp_path: Path) -> None:
    settings = parse_settings(_yaml(f"ssl.ca.location: {tmp_path}/ca.pem"), Path("c.yaml"))
    with pytest.raises(ConfigError) as refused:
        settings.cluster("a")
    missing = f"cluster 'a': ssl.ca.location file {tmp_path}/ca.pem does not exist"
    assert str(refused.value) == missing


def test_probe_is_not_a_file_and_existing_files_pass(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    check_files("a", {"ssl.ca.location": "probe"})
    check_files("a", {"ssl.ca.location": str(tmp_path / "ca.pem")})


def test_a_java_keystore_is_named(tmp_path: Path) -> None:
    (tmp_path / "client.jks").write_bytes(b"\xfe\xed")
    with pytest.raises(ConfigError, match=r"Java keystore \(JKS\); librdkafka takes a PKCS#12"):
        check_files("a", {"ssl.keystore.location": str(tmp_path / "client.jks")})


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ('No such configuration property: "foo.bar"', "unknown client property 'foo.bar'"),
        (
            'No such configuration property: "ssl.truststore.type"',
            "'ssl.truststore.type'; librdkafka takes nothing",
        ),
        ("Java JAAS configuration is not supported, see https://x", "librdkafka takes sasl."),
        ("Java TrustStores are not supported, use `ssl.ca.location`", "use ssl.ca.location"),
        (
            "Failed to create admin client: ssl.ca.location failed: "
            "error:05880020:x509 certificate routines::BIO lib",
            "cannot use the ssl.ca.location file /etc/ca.pem (x509 certificate routines::BIO lib)",
        ),
        (
            'Invalid value "hunter2" for configuration property "security.protocol"',
            "invalid value for client property 'security.protocol'",
        ),
        (
            'Configuration property "ssl.endpoint.identification.algorithm" cannot be set '
            "to empty value",
            "invalid value for client property 'ssl.endpoint.identification.algorithm'",
        ),
        (
            "Failed to create producer: sasl.username and sasl.password must be set",
            "client configuration refused: sasl.username and sasl.password must be set",
        ),
    ],
)
def test_librdkafka_refusals_become_one_line(message: str, says: str) -> None:
    line = refusal("cluster 'a'", message, {"ssl.ca.location": "/etc/ca.pem"})
    assert line.startswith("cluster 'a': ")
    assert says in line
    assert "hunter2" not in line
    assert "\n" not in line


@pytest.mark.parametrize(
    ("properties", "says"),
    [
        ({"foo.bar": "x"}, "unknown client property 'foo.bar'"),
        ({"security.protocol": "bogus"}, "invalid value for client property 'security.protocol'"),
        ({"socket.timeout.ms": "soon"}, "'socket.timeout.ms'"),
    ],
)
def test_making_a_client_with_a_refused_config_is_a_config_error(
    properties: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        admin_client(_cluster(**properties), ErrorTrap())
    with pytest.raises(ConfigError, match=says):
        producer(_cluster(**properties))


def test_a_ca_file_that_is_not_pem_is_named(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate\n")
    cluster = _cluster(**{"security.protocol": "SSL", "ssl.ca.location": str(ca)})
    with pytest.raises(ConfigError, match=f"cannot use the ssl.ca.location file {ca}"):
        admin_client(cluster, ErrorTrap())


def test_a_config_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    config = tmp_path / "clusters.yaml"
    config.write_bytes(b"clusters:\n  a: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"clusters.yaml: not UTF-8 text \(byte 0xff at offset"):
        load_settings(config)


def test_a_binary_plan_is_named(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(bytes(range(256)))
    with pytest.raises(ConfigError, match=r"cannot read plan .*plan\.yaml: not UTF-8"):
        read_user_file(plan, "plan")


def test_a_plan_with_control_characters_or_bad_dates_is_named() -> None:
    from kmigrate.documents import yaml_mapping

    with pytest.raises(ConfigError, match=r"p\.yaml: not a text document"):
        yaml_mapping("a: \x00\x01", "p.yaml", "not a plan")
    with pytest.raises(ConfigError, match=r"p\.yaml: bad YAML"):
        yaml_mapping("a: 2026-13-45", "p.yaml", "not a plan")
    with pytest.raises(ConfigError, match=r"c\.yaml: bad YAML"):
        parse_settings("clusters: 2026-13-45", Path("c.yaml"))
