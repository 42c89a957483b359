from pathlib import Path

import pytest

from kmigrate.config import (
    REDACTED,
    ClusterConfig,
    Settings,
    is_secret_key,
    parse_settings,
)
from kmigrate.errors import ConfigError

PASSWORD = "Hunter2-zq81XwVv"
STORE_PASSWORD = "dbpass-Qm47LkRt"
PATH = Path("/etc/kmigrate/clusters.yaml")

SECURE = f"""\
clusters:
  source:
    bootstrap_servers: 127.0.0.1:9092
    properties:
      security.protocol: SASL_PLAINTEXT
      sasl.mechanism: SCRAM-SHA-512
      sasl.username: admin
      sasl.password: {PASSWORD}
      ssl.key.password: {PASSWORD}
    java_properties:
      ssl.truststore.password: {PASSWORD}
store:
  url: postgresql://kmigrate:{STORE_PASSWORD}@db.example/kmigrate
"""


@pytest.fixture
def settings() -> Settings:
    return parse_settings(SECURE, PATH)


def _config_error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(text, PATH)
    return str(info.value)


# ------------------------------------------------------------------ is_secret_key


@pytest.mark.parametrize(
    "key",
    [
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "sasl.jaas.config",
        "sasl.oauthbearer.client.secret",
        "SASL.PASSWORD",
        "ssl.key.pem",
        "ssl.certificate.pem",
        "sasl.oauthbearer.token",
    ],
)
def test_secret_keys_are_recognised(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.username",
        "ssl.ca.location",
        "client.id",
        "acks",
    ],
)
def test_ordinary_keys_are_not_secret(key):
    assert not is_secret_key(key)


def test_inline_private_key_for_the_java_client_is_secret():
    # ssl.keystore.key holds a PEM private key itself (the Java client's inline form).
    assert is_secret_key("ssl.keystore.key")


def test_inline_private_key_in_java_properties_is_not_shown():
    private_key = "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    cluster = ClusterConfig(
        name="c", bootstrap_servers="a:1", java_properties={"ssl.keystore.key": private_key}
    )
    assert private_key not in repr(cluster)
    assert private_key not in cluster.model_dump_json()


# ------------------------------------------------------------------ secrets are held hidden


def test_password_is_not_in_str_or_repr_of_settings(settings):
    assert PASSWORD not in str(settings)
    assert PASSWORD not in repr(settings)
    assert STORE_PASSWORD not in str(settings)
    assert STORE_PASSWORD not in repr(settings)


def test_password_is_not_in_str_or_repr_of_cluster(settings):
    cluster = settings.cluster("source")
    assert PASSWORD not in str(cluster)
    assert PASSWORD not in repr(cluster)


def test_password_is_not_in_model_dump_json(settings):
    assert PASSWORD not in settings.model_dump_json()
    assert STORE_PASSWORD not in settings.model_dump_json()
    assert PASSWORD not in settings.cluster("source").model_dump_json()


def test_password_is_not_in_plain_model_dump_strings(settings):
    dumped = settings.model_dump()
    assert PASSWORD not in str(dumped)
    assert STORE_PASSWORD not in str(dumped)


def test_non_secret_values_remain_visible_in_repr(settings):
    text = repr(settings.cluster("source"))
    assert "SCRAM-SHA-512" in text
    assert "127.0.0.1:9092" in text


def test_secret_still_reaches_librdkafka_config(settings):
    conf = settings.cluster("source").as_librdkafka()
    assert conf["sasl.password"] == PASSWORD
    assert conf["ssl.key.password"] == PASSWORD


def test_store_url_is_kept_intact_behind_the_secret(settings):
    assert STORE_PASSWORD in settings.store.url.get_secret_value()


def test_password_substituted_from_env_is_hidden(monkeypatch):
    monkeypatch.setenv("KMT_SECRET_PW", PASSWORD)
    settings = parse_settings(
        "clusters:\n  s:\n    bootstrap_servers: a:1\n"
        "    properties:\n      sasl.password: ${KMT_SECRET_PW}\n",
        PATH,
    )
    assert PASSWORD not in repr(settings)
    assert PASSWORD not in settings.model_dump_json()
    assert settings.cluster("s").as_librdkafka()["sasl.password"] == PASSWORD


def test_numeric_password_is_still_a_secret():
    settings = parse_settings(
        "clusters:\n  s:\n    bootstrap_servers: a:1\n"
        "    properties:\n      sasl.password: 90210473\n",
        PATH,
    )
    assert "90210473" not in repr(settings)
    assert settings.cluster("s").as_librdkafka()["sasl.password"] == "90210473"


# ------------------------------------------------------------------ redacted_properties


def test_redacted_properties_replace_every_secret(settings):
    shown = settings.cluster("source").redacted_properties()
    assert shown["sasl.password"] == REDACTED
    assert shown["ssl.key.password"] == REDACTED
    assert PASSWORD not in str(shown)


def test_redacted_properties_keep_ordinary_values(settings):
    shown = settings.cluster("source").redacted_properties()
    assert shown["security.protocol"] == "SASL_PLAINTEXT"
    assert shown["sasl.mechanism"] == "SCRAM-SHA-512"
    assert shown["sasl.username"] == "admin"
    assert set(shown) == set(settings.cluster("source").properties)


# ------------------------------------------------------------------ no secrets in errors


def test_wrong_type_next_to_a_password_does_not_leak_it():
    message = _config_error(
        SECURE.replace("bootstrap_servers: 127.0.0.1:9092", "bootstrap_servers: {a: 1}")
    )
    assert "bootstrap_servers" in message
    assert PASSWORD not in message
    assert STORE_PASSWORD not in message


def test_bad_timeout_next_to_a_password_does_not_leak_it():
    message = _config_error(
        SECURE.replace("    properties:", "    timeout_s: soon\n    properties:")
    )
    assert "timeout_s" in message
    assert PASSWORD not in message


def test_unknown_cluster_key_next_to_a_password_does_not_leak_it():
    message = _config_error(SECURE.replace("    properties:", "    colour: blue\n    properties:"))
    assert "colour" in message
    assert PASSWORD not in message


def test_password_put_directly_under_a_cluster_is_rejected_without_showing_it():
    message = _config_error(
        f"clusters:\n  s:\n    bootstrap_servers: a:1\n    password: {PASSWORD}\n"
    )
    assert "clusters.s.password" in message
    assert PASSWORD not in message


def test_unknown_top_level_key_holding_a_password_does_not_leak_it():
    message = _config_error(SECURE + f"secret_stuff: {PASSWORD}\n")
    assert "secret_stuff" in message
    assert PASSWORD not in message


def test_store_url_of_wrong_type_does_not_leak_it():
    message = _config_error(
        f"clusters:\n  s:\n    bootstrap_servers: a:1\nstore:\n  url: [{STORE_PASSWORD}]\n"
    )
    assert "store.url" in message
    assert STORE_PASSWORD not in message


def test_properties_of_wrong_type_do_not_leak_their_value():
    message = _config_error(
        f"clusters:\n  s:\n    bootstrap_servers: a:1\n    properties: {PASSWORD}\n"
    )
    assert "properties" in message
    assert PASSWORD not in message


def test_bad_yaml_near_a_password_does_not_leak_it():
    message = _config_error(SECURE + "  broken: : :\n")
    assert "bad YAML" in message
    assert PASSWORD not in message


def test_unquoted_password_that_yaml_reads_as_an_alias_does_not_leak_it():
    # An unquoted value starting with '*' is a YAML alias; the parse error must not echo it.
    message = _config_error(
        "clusters:\n  s:\n    bootstrap_servers: a:1\n"
        f"    properties:\n      sasl.password: *{PASSWORD}\n"
    )
    assert "bad YAML" in message
    assert PASSWORD not in message


def test_missing_env_variable_for_a_password_names_only_the_variable(monkeypatch):
    monkeypatch.delenv("KMT_NOT_SET", raising=False)
    message = _config_error(SECURE + "spark:\n  master: ${KMT_NOT_SET}\n")
    assert "KMT_NOT_SET" in message
    assert PASSWORD not in message
