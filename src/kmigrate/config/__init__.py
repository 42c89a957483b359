"""Cluster connections and settings, loaded from clusters.yaml.

A file looks like this::

    env_file: secrets.env          # optional; KEY=VALUE lines used for ${KEY}
    clusters:
      source:
        bootstrap_servers: 127.0.0.1:9092
        properties:                # librdkafka names, the same the Java client uses
          security.protocol: SASL_PLAINTEXT
          sasl.mechanism: SCRAM-SHA-512
          sasl.username: admin
          sasl.password: ${SOURCE_PASSWORD}
    store:
      url: sqlite:///kmigrate.db   # relative paths resolve against this file's folder
    spark:
      master: local[4]             # default: local[2 x cores]
      conf: {}

One cluster entry yields confluent-kafka's config (``as_librdkafka``) for the admin
layer and the Spark tasks alike. Secret values are held as ``SecretStr`` and only
unwrapped inside that builder, so printing or logging a config never shows them.
"""

from kmigrate.config.loading import (
    CONFIG_ENV,
    DEFAULT_SANDBOX_DIR,
    LOCAL_CONFIG,
    SANDBOX_CONFIG_NAME,
    SANDBOX_DIR_ENV,
    find_config_path,
    load_settings,
    parse_settings,
    read_env_file,
    read_user_file,
    sandbox_dir,
)
from kmigrate.config.model import (
    REDACTED,
    ClientSaslConfig,
    ClientsConfig,
    ClientTlsConfig,
    ClusterConfig,
    EnsembleConfig,
    GatewayConfig,
    OAuthBearerConfig,
    SchemaRegistryConfig,
    Settings,
    SparkConfig,
    StoreConfig,
    default_master,
    is_secret_key,
)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_SANDBOX_DIR",
    "LOCAL_CONFIG",
    "REDACTED",
    "SANDBOX_CONFIG_NAME",
    "SANDBOX_DIR_ENV",
    "ClientSaslConfig",
    "ClientTlsConfig",
    "ClientsConfig",
    "ClusterConfig",
    "EnsembleConfig",
    "GatewayConfig",
    "OAuthBearerConfig",
    "SchemaRegistryConfig",
    "Settings",
    "SparkConfig",
    "StoreConfig",
    "default_master",
    "find_config_path",
    "is_secret_key",
    "load_settings",
    "parse_settings",
    "read_env_file",
    "read_user_file",
    "sandbox_dir",
]
