"""The settings' shapes: clusters, ensembles, clients, gateway, store and Spark, as
clusters.yaml holds them (the file format: this package's docstring). Secret values are
SecretStr, unwrapped only where a client's config is built."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from kmigrate.client_properties import check_files
from kmigrate.errors import ConfigError, UnknownClusterError

_SECRET_KEY = re.compile(r"password|secret|jaas|token|\.pem$|key\.pem|keystore\.key", re.IGNORECASE)
REDACTED = "********"


def is_secret_key(key: str) -> bool:
    """True for property names whose values must never be shown."""
    return bool(_SECRET_KEY.search(key))


T = TypeVar("T")


class _Strict(BaseModel):
    # A field's docstring is its description in the JSON schema (the configuration
    # reference of the documentation site is generated from it).
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def _joined(value: Any) -> Any:
    """A YAML list of host:port becomes the comma-separated string clients take."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return value


class SchemaRegistryConfig(_Strict):
    """A Schema Registry that speaks Confluent's REST API, paired with one cluster."""

    url: str
    """The registry's base URL, `http://host:port` or `https://...` (a path prefix is kept)."""
    basic_auth_user_info: SecretStr | None = None
    """`user:password` for HTTP basic authentication (write the password as `${ENV}`)."""
    ca_file: str | None = None
    """CA certificates (PEM) an `https` registry's certificate must chain to."""
    timeout_s: float = Field(default=10.0, gt=0)
    """Seconds to wait for one answer of the registry."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        scheme, _, rest = value.partition("://")
        if scheme not in ("http", "https") or not rest.strip("/"):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("basic_auth_user_info")
    @classmethod
    def _user_and_password(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and ":" not in value.get_secret_value():
            raise ValueError("must be user:password")
        return value


class ClusterConfig(_Strict):
    """How to reach one Kafka cluster."""

    name: str = ""
    """The cluster's name; set from its key under `clusters:`."""
    bootstrap_servers: str
    """`host:port` of one or more brokers: a comma-separated string or a YAML list."""
    properties: dict[str, str | SecretStr] = Field(default_factory=dict)
    """librdkafka client properties (security.protocol, sasl.*, ssl.*, ...). Java-client
    names are refused with their librdkafka equivalent; values of secret names (password,
    secret, token, key files) are never shown. `client.rack` on a source: the mirror reads
    from a replica in that rack where the cluster's brokers set replica.selector.class
    (KIP-392), saving cross-zone traffic."""
    java_properties: dict[str, str | SecretStr] = Field(default_factory=dict)
    """Unused (kmigrate has no Java client); still accepted."""
    timeout_s: float = Field(default=10.0, gt=0)
    """Seconds to wait for the cluster to answer before it counts as unreachable."""
    schema_registry: SchemaRegistryConfig | None = None
    """The Schema Registry the cluster's producers and consumers use, if any
    (`kmigrate schemas`, and verify's schema-id check)."""

    _join_servers = field_validator("bootstrap_servers", mode="before")(_joined)

    @field_validator("properties", "java_properties", mode="before")
    @classmethod
    def _hide_secrets(cls, value: Any) -> Any:
        return _hidden(value)

    def as_librdkafka(self) -> dict[str, str]:
        """confluent-kafka's config for this cluster, secrets unwrapped."""
        conf = {"bootstrap.servers": self.bootstrap_servers}
        conf.update({k: _reveal(v) for k, v in self.properties.items()})
        return conf

    def check_files(self) -> None:
        """Each file the client properties name (CA, certificate, key) exists."""
        plain = {k: v for k, v in self.properties.items() if isinstance(v, str)}
        check_files(f"cluster '{self.name}'", plain)
        registry = self.schema_registry
        if registry and registry.ca_file and not Path(registry.ca_file).exists():
            raise ConfigError(
                f"cluster '{self.name}': schema_registry.ca_file {registry.ca_file} does not exist"
            )

    def redacted_properties(self) -> dict[str, str]:
        """The client properties with every secret replaced, safe to print."""
        return {k: REDACTED if isinstance(v, SecretStr) else v for k, v in self.properties.items()}


class EnsembleConfig(_Strict):
    """How to reach one ZooKeeper ensemble: ``host:port,host:port`` (no chroot; commands
    that work under a chroot take it separately)."""

    name: str = ""
    """The ensemble's name; set from its key under `zookeeper:`."""
    connect: str
    """`host:port` of the ensemble's servers: a comma-separated string or a YAML list."""
    timeout_s: float = Field(default=10.0, gt=0)
    """Seconds to wait for the ensemble to answer."""

    _join_servers = field_validator("connect", mode="before")(_joined)


class ClientTlsConfig(_Strict):
    """TLS on the gateway's client listener (PEM files, relative to clusters.yaml)."""

    cert_file: str
    """The gateway's certificate chain (PEM)."""
    key_file: str
    """The certificate's private key (PEM)."""
    key_password: SecretStr | None = None
    """The private key's password, if it is encrypted."""
    ca_file: str | None = None
    """CA certificates that client certificates must chain to (mutual TLS)."""
    client_auth: Literal["none", "requested", "required"] | None = None
    """Whether clients must present a certificate (default: required with a ca_file,
    else none)."""

    @property
    def verify(self) -> Literal["none", "requested", "required"]:
        """Whether client certificates are asked for (default: required with a ca_file)."""
        return self.client_auth or ("required" if self.ca_file else "none")


class OAuthBearerConfig(_Strict):
    """How the gateway validates OAUTHBEARER tokens (JWT)."""

    hmac_key: SecretStr | None = None
    """The shared key of HS256/384/512-signed tokens."""
    jwks_file: str | None = None
    """A JSON Web Key Set file with the public keys of RS256/384/512-signed tokens."""
    issuer: str | None = None
    """The `iss` claim a token must carry, if set."""
    audience: str | None = None
    """The `aud` claim a token must carry, if set."""
    principal_claim: str = "sub"
    """The claim that names the client's principal."""
    allow_unsecured: bool = False
    """Accept unsigned tokens (alg "none"): for tests only."""


class ClientSaslConfig(_Strict):
    """SASL from clients; users' passwords come from env_file or the environment."""

    mechanisms: list[Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]]
    """The SASL mechanisms clients may use."""
    users: dict[str, SecretStr] = Field(default_factory=dict)
    """User name to password, for PLAIN and SCRAM (write passwords as `${ENV}`)."""
    scram_iterations: int = Field(default=4096, ge=4096)
    """PBKDF2 iterations of the SCRAM credentials the gateway derives."""
    oauthbearer: OAuthBearerConfig | None = None
    """How OAUTHBEARER tokens are validated (needed for that mechanism)."""


class ClientsConfig(_Strict):
    """How clients reach the gateway: TLS, SASL, both or neither (loopback only)."""

    tls: ClientTlsConfig | None = None
    """TLS on the client listener."""
    sasl: ClientSaslConfig | None = None
    """SASL authentication of clients."""

    @property
    def authenticated(self) -> bool:
        """Whether every client must prove who it is (SASL, or a required certificate)."""
        return self.sasl is not None or (self.tls is not None and self.tls.verify == "required")

    @property
    def security_protocol(self) -> str:
        """Kafka's name for what clients speak: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL."""
        if self.sasl is None:
            return "SSL" if self.tls else "PLAINTEXT"
        return "SASL_SSL" if self.tls else "SASL_PLAINTEXT"


class GatewayConfig(_Strict):
    """The gateway (kmigrate gateway): where its routes live, where groups are kept."""

    group_home: str
    """The cluster whose group coordinators serve the gateway's consumer groups."""
    zookeeper: str
    """Where the routing table and the live instances are kept: an ensemble of the
    `zookeeper:` section, or a `host:port` connect string."""
    path: str = "/kmigrate-gateway"
    """The ZooKeeper path under which the gateway keeps its state."""
    session_timeout_s: float = Field(default=6.0, gt=0)
    """ZooKeeper session timeout of each instance, in seconds."""
    age_every_s: float = Field(default=60.0, gt=0)
    """Period of the aging timer, in seconds (`gateway start --age-every` overrides it)."""
    clients: ClientsConfig = Field(default_factory=ClientsConfig)
    """How clients reach the gateway (TLS, SASL); without it, loopback only."""
    principals: dict[str, dict[str, dict[str, str | SecretStr]]] = Field(default_factory=dict)
    """Principal (`User:NAME`, or `*` for any other) to backend cluster to the client
    properties that replace the cluster's own for that principal (its credentials), so
    the backend's ACLs see who acts."""

    @field_validator("principals", mode="before")
    @classmethod
    def _hide_principal_secrets(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {
            str(p): {str(c): _hidden(v) for c, v in clusters.items()}
            if isinstance(clusters, Mapping)
            else clusters
            for p, clusters in value.items()
        }


class StoreConfig(_Strict):
    """The metadata store: links, offset maps, migrations."""

    url: SecretStr = SecretStr("sqlite:///kmigrate.db")
    """A SQLAlchemy URL: SQLite (a relative path resolves against the configuration
    file's folder) or PostgreSQL (`postgresql+psycopg://...`, the `postgres` extra)."""


def default_master() -> str:
    """Two task slots per core: a copy or verify task waits on Kafka (fetches, acks) about
    as long as it computes, so more tasks than cores overlap the waits (measured +26 %
    on 100 B records with local[4] on 2 cores)."""
    return f"local[{2 * (os.cpu_count() or 1)}]"


class SparkConfig(_Strict):
    """Where the mirror's and verify's Spark jobs run."""

    master: str = Field(default_factory=default_master)
    """The Spark master URL (default: `local[N]`, N two task slots per core)."""
    conf: dict[str, str] = Field(default_factory=dict)
    """Spark settings; they win over kmigrate's own."""


class Settings(_Strict):
    """Everything kmigrate reads from clusters.yaml."""

    clusters: dict[str, ClusterConfig] = Field(default_factory=dict)
    """Kafka clusters by name."""
    zookeeper: dict[str, EnsembleConfig] = Field(default_factory=dict)
    """ZooKeeper ensembles by name."""
    gateway: GatewayConfig | None = None
    """The gateway (`kmigrate gateway`)."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    """The metadata store."""
    spark: SparkConfig = Field(default_factory=SparkConfig)
    """Spark, for the mirror and verify."""
    env_file: str | None = None
    """A file of `KEY=VALUE` lines (relative to this file) for `${KEY}` references; the
    environment wins over it."""
    path: Path | None = Field(default=None, exclude=True)
    """The file these settings came from (set when loaded, not written in it)."""

    def cluster(self, name: str) -> ClusterConfig:
        """The named cluster, or an error that lists the known names; the files its
        client properties name exist (checked here, before any client is made)."""
        cluster = _named(self.clusters, name, "cluster", "clusters", self.path)
        cluster.check_files()
        return cluster

    def ensemble(self, name: str) -> EnsembleConfig:
        """The named ZooKeeper ensemble (the 'zookeeper:' section), or an error that
        lists the known names."""
        return _named(self.zookeeper, name, "ZooKeeper ensemble", "ensembles", self.path)


def _named(entries: Mapping[str, T], name: str, what: str, plural: str, path: Path | None) -> T:
    try:
        return entries[name]
    except KeyError:
        known = ", ".join(sorted(entries)) or "none"
        where = f" in {path}" if path else ""
        raise UnknownClusterError(
            f"unknown {what} '{name}'{where}; known {plural}: {known}"
        ) from None


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _hidden(value: Any) -> Any:
    """Client properties with the values of secret keys held as SecretStr."""
    if not isinstance(value, Mapping):
        return value
    return {
        str(k): SecretStr(str(v)) if is_secret_key(str(k)) else _scalar(v) for k, v in value.items()
    }


def _reveal(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value
