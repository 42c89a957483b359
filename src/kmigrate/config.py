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

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from kmigrate.client_properties import check_files, check_names
from kmigrate.errors import ConfigError, NotFoundError, UnknownClusterError

CONFIG_ENV = "KMIGRATE_CONFIG"
LOCAL_CONFIG = Path("kmigrate.yaml")
SANDBOX_DIR_ENV = "KMIGRATE_SANDBOX_DIR"
DEFAULT_SANDBOX_DIR = Path(".kmigrate/sandbox")
SANDBOX_CONFIG_NAME = "clusters.yaml"

_SECRET_KEY = re.compile(r"password|secret|jaas|token|\.pem$|key\.pem|keystore\.key", re.IGNORECASE)
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
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
    secret, token, key files) are never shown."""
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


# ---------------------------------------------------------------- loading


def find_config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The clusters.yaml to use: --config, then $KMIGRATE_CONFIG, then ./kmigrate.yaml,
    then the running sandbox's."""
    if explicit:
        return _existing(Path(explicit), "--config")
    if os.environ.get(CONFIG_ENV):
        return _existing(Path(os.environ[CONFIG_ENV]), f"${CONFIG_ENV}")
    if LOCAL_CONFIG.is_file():
        return LOCAL_CONFIG
    sandbox = sandbox_dir() / SANDBOX_CONFIG_NAME
    if sandbox.is_file():
        return sandbox
    raise ConfigError(
        "no cluster configuration found: pass --config FILE, set $KMIGRATE_CONFIG, "
        "create ./kmigrate.yaml, or start local clusters with `kmigrate sandbox up`"
    )


def sandbox_dir() -> Path:
    """The default sandbox run directory ($KMIGRATE_SANDBOX_DIR or .kmigrate/sandbox)."""
    return Path(os.environ.get(SANDBOX_DIR_ENV) or DEFAULT_SANDBOX_DIR)


def _existing(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"config file {path} (from {origin}) does not exist")
    return path


def load_settings(explicit: str | os.PathLike[str] | None = None) -> Settings:
    """Load and validate clusters.yaml, substituting ${ENV} references."""
    path = find_config_path(explicit)
    return parse_settings(read_user_file(path, "config file"), path)


def read_user_file(path: Path, what: str) -> str:
    """The text of a file the user named (a plan, a config, ...), or one line saying why
    not: it does not exist (exit 4), it is a folder, cannot be read, is not UTF-8 text
    or holds binary data (exit 2)."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder, not a file")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"cannot read {what} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
            f"at offset {exc.start}); save it as UTF-8"
        ) from None
    if "\x00" in text:
        raise ConfigError(f"cannot read {what} {path}: not text (it holds binary data)")
    return text


def parse_settings(text: str, path: Path) -> Settings:
    """Validate the text of a clusters.yaml; ``path`` anchors relative paths and messages."""
    raw = _parse_yaml(text, path)
    env_file = raw.get("env_file")
    if env_file is not None and not isinstance(env_file, str):
        raise ConfigError(f"{path}: env_file must be a file path")
    env = dict(read_env_file(path.parent / env_file)) if env_file else {}
    env.update(os.environ)
    raw = _substitute(raw, env, path, loc="")
    clusters = raw.get("clusters")
    ensembles = raw.get("zookeeper") or {}
    if not isinstance(clusters, dict) and not (clusters is None and ensembles):
        raise ConfigError(f"{path}: 'clusters:' must map cluster names to their settings")
    if not isinstance(ensembles, dict):
        raise ConfigError(f"{path}: 'zookeeper:' must map ensemble names to their settings")
    if clusters is None:
        raw.pop("clusters", None)
    for section in (clusters or {}, ensembles):
        for name, entry in section.items():
            if isinstance(entry, dict):
                entry.setdefault("name", name)
    try:
        settings = Settings.model_validate({**raw, "path": path})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe_validation(exc)}") from None
    if not settings.clusters and not settings.zookeeper:
        raise ConfigError(f"{path}: no clusters defined under 'clusters:'")
    _check_property_names(settings, path)
    return settings


def _check_property_names(settings: Settings, path: Path) -> None:
    """Java-client names in any client properties are refused with their librdkafka
    equivalent (files are checked when a cluster is used: ``Settings.cluster``)."""
    for name, cluster in settings.clusters.items():
        check_names(f"{path}: cluster '{name}'", cluster.properties)
    principals = settings.gateway.principals if settings.gateway else {}
    for principal, overrides in principals.items():
        for name, properties in overrides.items():
            check_names(f"{path}: gateway principal '{principal}' on '{name}'", properties)


def _parse_yaml(text: str, path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(text)
    except yaml.reader.ReaderError:
        raise ConfigError(f"{path}: not a text file (control characters: a binary file?)") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{path}: bad YAML: a value that cannot be read (a date?)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        # YAML quotes the offending text (an alias, a tag) and that text may be a
        # password: name the place, never the content.
        problem = re.sub(r"'[^']*'", "'...'", problem)
        raise ConfigError(f"{path}: bad YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'clusters:' key at the top")
    return raw


def _describe_validation(exc: ValidationError) -> str:
    # Never include the offending input: it may be a password.
    errors = exc.errors(include_input=False, include_url=False)
    shown = [
        f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg'].lower()}"
        for e in errors[:3]
    ]
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(shown) + more


def read_env_file(path: Path) -> Mapping[str, str]:
    """KEY=VALUE lines (optional `export`, quotes and # comments) of an env file."""
    if not path.exists():
        raise ConfigError(f"env_file {path} does not exist")
    lines = read_user_file(path, "env_file").splitlines()
    values = {}
    for raw in lines:
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.removeprefix("export ").partition("=")
            values[key.strip()] = value.strip().strip("'\"")
    return values


def _substitute(value: Any, env: Mapping[str, str], path: Path, loc: str) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, env, path, f"{loc}.{k}".lstrip(".")) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env, path, f"{loc}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: _env_value(m, env, path, loc), value)
    return value


def _env_value(match: re.Match[str], env: Mapping[str, str], path: Path, loc: str) -> str:
    name, default = match.group(1), match.group(2)
    if name in env:
        return env[name]
    if default is not None:
        return default
    raise ConfigError(f"{path}: environment variable {name} is not set (used in {loc})")
