import os
from pathlib import Path

import pytest

from kmigrate.config import ClusterConfig, Settings, parse_settings
from kmigrate.errors import ConfigError, UnknownClusterError

MINIMAL = """\
clusters:
  source:
    bootstrap_servers: 127.0.0.1:9092
"""


def _parse(text: str, path: Path | None = None) -> Settings:
    return parse_settings(text, path or Path("/etc/kmigrate/clusters.yaml"))


# ------------------------------------------------------------------ basic shape


def test_minimal_file_yields_one_cluster_named_after_its_key():
    settings = _parse(MINIMAL)
    cluster = settings.cluster("source")
    assert isinstance(cluster, ClusterConfig)
    assert cluster.name == "source"
    assert cluster.bootstrap_servers == "127.0.0.1:9092"
    assert cluster.properties == {}
    assert cluster.java_properties == {}


def test_settings_remember_the_path_they_were_parsed_from():
    path = Path("/srv/conf/clusters.yaml")
    assert _parse(MINIMAL, path).path == path


def test_bootstrap_servers_given_as_a_yaml_list_are_joined_with_commas():
    settings = _parse(
        """\
clusters:
  source:
    bootstrap_servers:
      - 10.0.0.1:9092
      - 10.0.0.2:9092
      - 10.0.0.3:9092
"""
    )
    assert settings.cluster("source").bootstrap_servers == (
        "10.0.0.1:9092,10.0.0.2:9092,10.0.0.3:9092"
    )


def test_every_cluster_gets_its_own_name():
    settings = _parse(
        """\
clusters:
  source:
    bootstrap_servers: a:9092
  target:
    bootstrap_servers: b:9092
"""
    )
    assert settings.cluster("source").name == "source"
    assert settings.cluster("target").name == "target"
    assert settings.cluster("target").bootstrap_servers == "b:9092"


def test_non_string_property_values_become_strings_and_booleans_lowercase():
    settings = _parse(
        """\
clusters:
  source:
    bootstrap_servers: a:9092
    properties:
      enable.ssl.certificate.verification: false
      enable.idempotence: true
      message.max.bytes: 1000000
"""
    )
    props = settings.cluster("source").as_librdkafka()
    assert props["enable.ssl.certificate.verification"] == "false"
    assert props["enable.idempotence"] == "true"
    assert props["message.max.bytes"] == "1000000"


def test_store_and_spark_sections_have_defaults():
    settings = _parse(MINIMAL)
    # More tasks than cores: copy and verify tasks wait on Kafka as much as they compute.
    assert settings.spark.master == f"local[{2 * (os.cpu_count() or 1)}]"
    assert settings.spark.conf == {}
    assert settings.store.url.get_secret_value() == "sqlite:///kmigrate.db"


def test_timeout_is_parsed_and_must_be_positive():
    settings = _parse(MINIMAL + "    timeout_s: 2.5\n")
    assert settings.cluster("source").timeout_s == 2.5
    with pytest.raises(ConfigError, match="timeout_s"):
        _parse(MINIMAL + "    timeout_s: 0\n")


# ------------------------------------------------------------------ rejected input


def test_unknown_top_level_key_is_rejected_naming_the_key():
    with pytest.raises(ConfigError, match="klusters"):
        _parse(MINIMAL + "klusters: {}\n")


def test_unknown_cluster_key_is_rejected_naming_the_key():
    with pytest.raises(ConfigError, match=r"clusters\.source\.bootstrap_server"):
        _parse(
            """\
clusters:
  source:
    bootstrap_servers: a:9092
    bootstrap_server: b:9092
"""
        )


def test_missing_bootstrap_servers_is_rejected():
    with pytest.raises(ConfigError, match=r"clusters\.source\.bootstrap_servers"):
        _parse("clusters:\n  source:\n    timeout_s: 3\n")


def test_errors_name_the_file():
    path = Path("/some/where/odd-name.yaml")
    with pytest.raises(ConfigError, match=r"odd-name\.yaml"):
        parse_settings(MINIMAL + "bogus: 1\n", path)


def test_empty_clusters_mapping_is_rejected():
    with pytest.raises(ConfigError, match="no clusters"):
        _parse("clusters: {}\n")


def test_null_clusters_is_a_config_error():
    with pytest.raises(ConfigError, match="clusters"):
        _parse("clusters:\n")


@pytest.mark.parametrize("text", ["", "just a string\n", "- a\n- b\n", "42\n"])
def test_a_document_that_is_not_a_mapping_is_a_config_error(text):
    with pytest.raises(ConfigError, match="mapping"):
        _parse(text)


@pytest.mark.parametrize("clusters", ["[source, target]", "source", "3"])
def test_clusters_of_the_wrong_type_is_a_config_error(clusters):
    # A user's typo must be reported as a ConfigError, never crash with a Python error.
    with pytest.raises(ConfigError, match="clusters"):
        _parse(f"clusters: {clusters}\n")


def test_a_cluster_that_is_not_a_mapping_is_a_config_error():
    with pytest.raises(ConfigError, match=r"clusters\.source"):
        _parse("clusters:\n  source: 127.0.0.1:9092\n")


def test_env_file_of_the_wrong_type_is_a_config_error():
    with pytest.raises(ConfigError, match="env_file"):
        _parse("env_file: 3\n" + MINIMAL)


def test_bad_yaml_names_line_and_column():
    text = """\
clusters:
  source:
    bootstrap_servers: a:9092
  t: : :
"""
    with pytest.raises(ConfigError) as info:
        _parse(text)
    message = str(info.value)
    assert "bad YAML" in message
    assert "line 4" in message
    assert "column 6" in message


def test_bad_yaml_with_a_tab_names_its_line():
    with pytest.raises(ConfigError, match="line 3"):
        _parse("clusters:\n  source:\n\tbootstrap_servers: a:9092\n")


def test_config_error_messages_are_a_single_line():
    with pytest.raises(ConfigError) as info:
        _parse(MINIMAL + "    a: 1\n    b: 2\n    c: 3\n    d: 4\n")
    assert "\n" not in str(info.value)
    assert "more" in str(info.value)


# ------------------------------------------------------------------ cluster lookup


def test_unknown_cluster_lookup_lists_known_names_sorted():
    settings = _parse(
        """\
clusters:
  zeta:
    bootstrap_servers: a:9092
  alpha:
    bootstrap_servers: b:9092
"""
    )
    with pytest.raises(UnknownClusterError) as info:
        settings.cluster("middle")
    message = str(info.value)
    assert "'middle'" in message
    assert "alpha, zeta" in message


def test_unknown_cluster_error_is_a_config_error_and_names_the_file():
    settings = parse_settings(MINIMAL, Path("/cfg/clusters.yaml"))
    with pytest.raises(ConfigError, match=r"/cfg/clusters\.yaml"):
        settings.cluster("nope")


# ------------------------------------------------------------------ ${ENV} substitution


def test_env_reference_is_substituted(monkeypatch):
    monkeypatch.setenv("KMT_BOOTSTRAP", "10.1.1.1:9092")
    settings = _parse("clusters:\n  source:\n    bootstrap_servers: ${KMT_BOOTSTRAP}\n")
    assert settings.cluster("source").bootstrap_servers == "10.1.1.1:9092"


def test_env_reference_inside_a_longer_string_is_substituted(monkeypatch):
    monkeypatch.setenv("KMT_HOST", "broker.example")
    monkeypatch.setenv("KMT_PORT", "9093")
    settings = _parse("clusters:\n  source:\n    bootstrap_servers: ${KMT_HOST}:${KMT_PORT}\n")
    assert settings.cluster("source").bootstrap_servers == "broker.example:9093"


def test_env_default_is_used_when_variable_is_unset(monkeypatch):
    monkeypatch.delenv("KMT_UNSET", raising=False)
    settings = _parse("clusters:\n  source:\n    bootstrap_servers: ${KMT_UNSET:-localhost:9092}\n")
    assert settings.cluster("source").bootstrap_servers == "localhost:9092"


def test_env_default_is_ignored_when_variable_is_set(monkeypatch):
    monkeypatch.setenv("KMT_SET", "real:9092")
    settings = _parse("clusters:\n  source:\n    bootstrap_servers: ${KMT_SET:-fallback:1}\n")
    assert settings.cluster("source").bootstrap_servers == "real:9092"


def test_empty_env_default_is_allowed(monkeypatch):
    monkeypatch.delenv("KMT_UNSET", raising=False)
    settings = _parse(
        MINIMAL + "    properties:\n      client.id: kmigrate${KMT_UNSET:-}\n",
    )
    assert settings.cluster("source").as_librdkafka()["client.id"] == "kmigrate"


def test_env_references_inside_lists_are_substituted(monkeypatch):
    monkeypatch.setenv("KMT_B1", "h1:9092")
    monkeypatch.setenv("KMT_B2", "h2:9092")
    settings = _parse(
        "clusters:\n  source:\n    bootstrap_servers:\n      - ${KMT_B1}\n      - ${KMT_B2}\n"
    )
    assert settings.cluster("source").bootstrap_servers == "h1:9092,h2:9092"


def test_substituted_value_is_not_parsed_as_yaml(monkeypatch):
    monkeypatch.setenv("KMT_PW", "a: [b, #c")
    settings = _parse(MINIMAL + "    properties:\n      sasl.password: ${KMT_PW}\n")
    assert settings.cluster("source").as_librdkafka()["sasl.password"] == "a: [b, #c"


def test_missing_env_variable_names_the_variable_and_where_it_is_used(monkeypatch):
    monkeypatch.delenv("KMT_MISSING_PW", raising=False)
    text = MINIMAL + "    properties:\n      sasl.password: ${KMT_MISSING_PW}\n"
    with pytest.raises(ConfigError) as info:
        _parse(text)
    message = str(info.value)
    assert "KMT_MISSING_PW" in message
    assert "clusters.source.properties.sasl.password" in message


def test_missing_env_variable_in_a_list_names_the_list_position(monkeypatch):
    monkeypatch.delenv("KMT_MISSING", raising=False)
    with pytest.raises(ConfigError, match=r"bootstrap_servers\[1\]"):
        _parse("clusters:\n  s:\n    bootstrap_servers:\n      - a:1\n      - ${KMT_MISSING}\n")


# ------------------------------------------------------------------ env_file


def _write_config(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "clusters.yaml"
    path.write_text(text)
    return path


def test_env_file_is_read_relative_to_the_yaml_file(tmp_path, monkeypatch):
    monkeypatch.delenv("KMT_FILE_PW", raising=False)
    monkeypatch.delenv("KMT_FILE_HOST", raising=False)
    conf_dir = tmp_path / "conf"
    path = _write_config(
        conf_dir,
        "env_file: secrets.env\n"
        "clusters:\n  source:\n    bootstrap_servers: ${KMT_FILE_HOST}\n"
        "    properties:\n      sasl.password: ${KMT_FILE_PW}\n",
    )
    (conf_dir / "secrets.env").write_text("KMT_FILE_PW=s3cret\nKMT_FILE_HOST=h:9092\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    cluster = parse_settings(path.read_text(), path).cluster("source")

    assert cluster.bootstrap_servers == "h:9092"
    assert cluster.as_librdkafka()["sasl.password"] == "s3cret"


def test_env_file_ignores_comments_blank_lines_export_and_quotes(tmp_path, monkeypatch):
    for name in ("KMT_A", "KMT_B", "KMT_C"):
        monkeypatch.delenv(name, raising=False)
    path = _write_config(
        tmp_path,
        "env_file: vars.env\n"
        "clusters:\n  s:\n    bootstrap_servers: x:1\n    properties:\n"
        "      a: ${KMT_A}\n      b: ${KMT_B}\n      c: ${KMT_C}\n",
    )
    (tmp_path / "vars.env").write_text(
        "# a comment\n\nexport KMT_A=alpha\nKMT_B = 'beta'\nKMT_C=\"gam=ma\"\nnot a pair\n"
    )
    props = parse_settings(path.read_text(), path).cluster("s").as_librdkafka()
    assert props["a"] == "alpha"
    assert props["b"] == "beta"
    assert props["c"] == "gam=ma"


def test_missing_env_file_is_a_config_error_naming_it(tmp_path):
    path = _write_config(tmp_path, "env_file: nothere.env\n" + MINIMAL)
    with pytest.raises(ConfigError, match=r"nothere\.env"):
        parse_settings(path.read_text(), path)
