"""The plan of a ZooKeeper-to-KRaft migration (KIP-866, Kafka 3.9.x), written from what
the cluster answered (pure): the controllers to provision and their configuration, what
each broker's configuration gains and loses in roll 1 (migration mode) and roll 2
(KRaft broker), what the controllers lose at finalization, and what Kafka's guide
forbids, refused by name.

The plan is a YAML document an operator reviews; `kraft migrate` runs it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from kmigrate.config import read_user_file
from kmigrate.documents import validated, yaml_mapping
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.kraft import sasl
from kmigrate.kraft.trust import (
    KRAFT_AUTHORIZER,
    ZK_AUTHORIZER,
    BrokerRules,
    Trust,
    controller_trust,
)

PLAN_KIND = "kmigrate-kraft-migration"
MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
CONTROLLER_LISTENER = "CONTROLLER"
LOWEST_IBP = (3, 9)
SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
# What a controller needs of the brokers' SSL settings to present their certificate and
# trust theirs (the brokers use them for the controller channel as they are).
SSL_SETTINGS = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.endpoint.identification.algorithm",
    # who a certificate is: the controllers must name the brokers' as the brokers do
    "ssl.principal.mapping.rules",
)
SSL_SECRETS = (
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)
# Controller ids start here (or above the highest broker id): never a broker's id.
FIRST_CONTROLLER_ID = 3000


@dataclass(frozen=True)
class BrokerView:
    """One broker of a ZooKeeper-mode cluster, from its configuration as it answered."""

    broker_id: int
    host: str
    port: int
    ibp: str | None  # inter.broker.protocol.version, e.g. "3.9-IV0"
    zookeeper_connect: str | None  # None: not in ZooKeeper mode
    process_roles: str | None  # set: a KRaft broker already
    migration_enabled: bool
    inter_broker_listener: str | None
    protocol_map: str | None  # listener.security.protocol.map
    log_dirs: str | None
    authorizer: str | None = None
    # the authorizer's settings Kafka shows, and those it only says are set (hidden)
    authorizer_settings: tuple[tuple[str, str], ...] = ()
    hidden: tuple[str, ...] = ()
    inter_broker_mechanism: str | None = None  # sasl.mechanism.inter.broker.protocol
    # SSL: the key and trust store settings the controllers get (SSL_SETTINGS), and the
    # SSL settings the broker sets but Kafka does not show (passwords, inline PEM)
    ssl_settings: tuple[tuple[str, str], ...] = ()
    ssl_hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterView:
    name: str
    cluster_id: str | None  # /cluster/id in ZooKeeper
    brokers: tuple[BrokerView, ...]
    registered: tuple[int, ...]  # /brokers/ids


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlannedController(_Strict):
    node_id: int
    host: str
    port: int


class ConfigChange(_Strict):
    """What a roll sets and removes in a node's configuration."""

    set: dict[str, str] = {}
    remove: list[str] = []

    def applied(self, config: dict[str, str]) -> dict[str, str]:
        kept = {k: v for k, v in config.items() if k not in self.remove}
        return kept | self.set

    def revealed(self, password: str) -> ConfigChange:
        """The change with the password where the plan holds its place (kraft.sasl)."""
        return ConfigChange(set=sasl.revealed(self.set, password), remove=self.remove)


class KRaftPlan(_Strict):
    kind: str = PLAN_KIND
    kafka: str
    cluster_id: str
    zookeeper_connect: str  # the brokers', with its chroot
    brokers: dict[int, str]  # id -> host:port (where kmigrate asks each broker its mode)
    controllers: list[PlannedController]
    controller_config: dict[str, str]  # every controller's, but node.id and listeners
    roll1: ConfigChange  # every broker: into migration mode (KIP-866 "enable migration")
    roll2: ConfigChange  # every broker: a KRaft broker (and node.id = its broker.id)
    finalize: ConfigChange  # every controller: ZooKeeper settings gone
    protocol_map_before: str | None  # the brokers' listener.security.protocol.map
    sasl_user: str | None = None  # nodes authenticate each other as this user (kraft.sasl)
    # kmigrate's own principal on the controller listener (kraft.trust), and the file its
    # secret is in (beside the plan; the plan never holds the secret itself)
    controller_user: str | None = None
    controller_secret_file: str | None = None
    # SSL: the principal of the brokers' certificate, which controllers present too
    certificate_principal: str | None = None
    probe_as: list[str] = []  # clusters.yaml entries reaching this cluster as other principals
    authorizer_before: str | None = None  # AclAuthorizer: StandardAuthorizer in KRaft
    guide: str = "https://kafka.apache.org/39/documentation.html#kraft_zk_migration"

    @property
    def needs_secret(self) -> bool:
        """Whether nodes' configurations need a password (kraft.sasl): the SASL user's
        from clusters.yaml, or the controller principal's from its secret file."""
        return self.sasl_user is not None or self.controller_user is not None

    @property
    def voters(self) -> str:
        return ",".join(f"{c.node_id}@{c.host}:{c.port}" for c in self.controllers)

    def broker_host(self, broker_id: int) -> str:
        return self.brokers[broker_id].rsplit(":", 1)[0]

    @property
    def controller_ids(self) -> list[int]:
        return [c.node_id for c in self.controllers]

    def controller_properties(self, node_id: int, *, finalized: bool = False) -> dict[str, str]:
        c = next(c for c in self.controllers if c.node_id == node_id)
        config = self.controller_config | {
            "node.id": str(node_id),
            "listeners": f"{CONTROLLER_LISTENER}://{c.host}:{c.port}",
        }
        return self.finalize.applied(config) if finalized else config

    def roll2_for(self, broker_id: int) -> ConfigChange:
        return ConfigChange(
            set=self.roll2.set | {"node.id": str(broker_id)}, remove=self.roll2.remove
        )

    def revert_roll2_for(self, broker_id: int) -> ConfigChange:
        """A KRaft broker back into migration mode (the guide's first revert roll):
        process.roles gone, node.id back to broker.id, zookeeper.connect restored."""
        restored = {"broker.id": str(broker_id), "zookeeper.connect": self.zookeeper_connect}
        if self.authorizer_before:
            restored["authorizer.class.name"] = self.authorizer_before
        return ConfigChange(set=self.roll1.set | restored, remove=["process.roles", "node.id"])

    def revert_roll1(self) -> ConfigChange:
        """A broker in migration mode back to plain ZooKeeper mode (the guide's last
        revert roll): the migration flag and the controller settings removed, the
        listener map as it was."""
        before = self.protocol_map_before
        return ConfigChange(
            set={"listener.security.protocol.map": before} if before else {},
            remove=[MIGRATION_FLAG, "controller.quorum.voters", "controller.listener.names"]
            + (list(sasl.broker_side("")) if self.needs_secret else [])
            + ([] if before else ["listener.security.protocol.map"]),
        )

    def to_yaml(self) -> str:
        header = (
            f"# ZooKeeper -> KRaft migration of cluster {self.kafka} (KIP-866, Kafka 3.9).\n"
            "# Review it; run it with `kmigrate kraft migrate PLAN`. Finalization is a separate\n"
            "# command (`kmigrate kraft finalize PLAN`): the point of no return.\n"
        )
        return header + yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def parse_ibp(value: str | None) -> tuple[int, int] | None:
    """ "3.9-IV0" -> (3, 9); None when it does not read as a version."""
    if not value:
        return None
    head = value.split("-", 1)[0].split(".")
    try:
        return int(head[0]), int(head[1]) if len(head) > 1 else 0
    except ValueError:
        return None


def plan_kraft(
    view: ClusterView,
    controllers: list[tuple[str, int]],
    zookeeper_connect: str,
    hidden_values: Mapping[str, str] | None = None,
    sasl_user: str | None = None,
    controller_secret_file: str | None = None,
    certificate_principal: str | None = None,
) -> KRaftPlan:
    """The plan for ``view``, with controllers at ``controllers`` (host, port); refuses
    what the guide forbids, naming the broker and the setting. ``hidden_values``: the
    brokers' authorizer settings Kafka does not show (from their server.properties).
    ``sasl_user``: who the nodes authenticate as when the inter-broker listener uses
    SASL (kraft.sasl). ``controller_secret_file``: where the secret of kmigrate's own
    controller principal is, if the plan needs one (kraft.trust; see :func:`trust_of`).
    ``certificate_principal``: the principal of the brokers' certificate, where they
    talk SSL (the controllers present it too)."""
    _check(view)
    if not controllers:
        raise ConfigError("a KRaft quorum needs at least one controller")
    first = max(FIRST_CONTROLLER_ID, max(b.broker_id for b in view.brokers) + 1)
    planned = [
        PlannedController(node_id=first + i, host=host, port=port)
        for i, (host, port) in enumerate(controllers)
    ]
    voters = ",".join(f"{c.node_id}@{c.host}:{c.port}" for c in planned)
    sample = view.brokers[0]
    listener = sample.inter_broker_listener or "PLAINTEXT"
    user = _sasl_user(view, sasl_user)
    trust = trust_of(view, len(planned), hidden_values, user, certificate_principal)
    login = user or trust.controller_user
    if trust.controller_user and not controller_secret_file:
        raise ConfigError("the plan needs the controller principal's secret file")
    tls = _protocol_of(sample) == "SASL_SSL"  # SSL alone: trust.certificate
    protocol_map = _with_controller(
        sample.protocol_map or f"{listener}:{listener}",
        "SSL" if trust.certificate else _sasl_protocol(tls) if login else "PLAINTEXT",
    )
    mechanism = sample.inter_broker_mechanism or "GSSAPI"
    if user:
        # SASL_SSL: the controllers trust the brokers' listener and serve theirs with the
        # brokers' certificate, so PLAIN's password never crosses the network in clear
        secured = sasl.controller_side(user, listener, mechanism) | (_stores(view) if tls else {})
    elif trust.certificate:
        secured = _stores(view) | {"listener.name.controller.ssl.client.auth": "required"}
    else:
        secured = sasl.controller_listener(login) if login else {}
    to_controllers = sasl.broker_side(login) if login else {}
    controller_config = {
        "process.roles": "controller",
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listener.security.protocol.map": protocol_map,
        # the controller sends its RPCs to the brokers on their inter-broker listener
        "inter.broker.listener.name": listener,
        MIGRATION_FLAG: "true",
        "zookeeper.connect": zookeeper_connect,
        **secured,
        **trust.authorizer,
    }
    roll1 = ConfigChange(
        set={
            "inter.broker.protocol.version": "3.9",
            MIGRATION_FLAG: "true",
            "controller.quorum.voters": voters,
            "controller.listener.names": CONTROLLER_LISTENER,
            "listener.security.protocol.map": protocol_map,
            **to_controllers,
        }
    )
    roll2 = ConfigChange(
        set={
            "process.roles": "broker",
            "controller.quorum.voters": voters,
            "controller.listener.names": CONTROLLER_LISTENER,
            "listener.security.protocol.map": protocol_map,
            **to_controllers,
            # the brokers keep their other authorizer settings (super users too) as they are
            **({"authorizer.class.name": KRAFT_AUTHORIZER} if trust.authorizer else {}),
        },
        remove=[
            "broker.id",
            "inter.broker.protocol.version",
            MIGRATION_FLAG,
            "zookeeper.connect",
            "zookeeper.session.timeout.ms",
            "zookeeper.connection.timeout.ms",
        ],
    )
    return KRaftPlan(
        kafka=view.name,
        cluster_id=view.cluster_id or "",
        zookeeper_connect=zookeeper_connect,
        brokers={b.broker_id: f"{b.host}:{b.port}" for b in view.brokers},
        controllers=planned,
        controller_config=controller_config,
        roll1=roll1,
        roll2=roll2,
        finalize=ConfigChange(remove=[MIGRATION_FLAG, "zookeeper.connect"]),
        protocol_map_before=sample.protocol_map,
        authorizer_before=sample.authorizer,
        sasl_user=user,
        controller_user=trust.controller_user,
        controller_secret_file=controller_secret_file if trust.controller_user else None,
        certificate_principal=trust.principal if trust.certificate else None,
    )


def trust_of(
    view: ClusterView,
    voters: int,
    hidden_values: Mapping[str, str] | None = None,
    sasl_user: str | None = None,
    certificate_principal: str | None = None,
) -> Trust:
    """Who will reach the controllers, and how (kraft.trust): asked before the plan is
    written, so `kraft plan` knows whether to generate a controller secret."""
    _check(view)
    if talks_ssl(view) and not certificate_principal:
        raise ConfigError(
            f"cluster '{view.name}': its brokers talk SSL; the controllers present the "
            "brokers' certificate, whose principal kmigrate could not read: pass "
            "--certificate-principal 'User:CN=...' as the brokers see it"
        )
    rules = [
        BrokerRules(b.broker_id, b.authorizer, dict(b.authorizer_settings), b.hidden)
        for b in view.brokers
    ]
    user = _sasl_user(view, sasl_user)
    principal = certificate_principal if talks_ssl(view) else None
    trust = controller_trust(view.name, rules, hidden_values or {}, user, voters, principal)
    return replace(trust, tls=_protocol_of(view.brokers[0]) == "SASL_SSL")


def talks_ssl(view: ClusterView) -> bool:
    """Whether the brokers' inter-broker listener is SSL (certificates, no SASL)."""
    return _protocol_of(view.brokers[0]) == "SSL"


def _sasl_protocol(tls: bool) -> str:
    return "SASL_SSL" if tls else "SASL_PLAINTEXT"


def _stores(view: ClusterView) -> dict[str, str]:
    """A controller's SSL settings where the brokers talk TLS: their key and trust
    stores (and mapping rules). With SSL alone, the controller listener asks for client
    certificates too (so brokers and controllers are the certificate's principal there,
    never ANONYMOUS)."""
    sample = view.brokers[0]
    found = dict(sample.ssl_settings)
    if sample.ssl_hidden:
        raise ConflictError(
            f"cluster '{view.name}': broker {sample.broker_id} sets {sample.ssl_hidden[0]}, "
            "which Kafka does not show; kmigrate migrates TLS clusters whose key and trust "
            "stores need no password so far (PEM files, as `sandbox up --tls` writes)"
        )
    if "ssl.keystore.location" not in found:
        raise ConflictError(
            f"cluster '{view.name}': broker {sample.broker_id} names no ssl.keystore.location "
            "(a key store per listener is not migrated yet)"
        )
    for b in view.brokers[1:]:
        if dict(b.ssl_settings) != found:
            raise ConflictError(
                f"cluster '{view.name}': brokers {sample.broker_id} and {b.broker_id} differ in "
                "their ssl.keystore/ssl.truststore settings; the controllers present one "
                "certificate: make them equal first"
            )
    return found


def _sasl_user(view: ClusterView, given: str | None) -> str | None:
    """The user nodes authenticate as: None on a PLAINTEXT or SSL inter-broker listener."""
    if _protocol_of(view.brokers[0]) in ("PLAINTEXT", "SSL"):
        return None
    if not given:
        raise ConfigError(
            f"cluster '{view.name}': its brokers authenticate each other with SASL; give "
            "kmigrate a SASL user for it in clusters.yaml (sasl.username/sasl.password, a "
            "super user: the controllers and brokers authenticate each other as it)"
        )
    return given


def _with_controller(protocol_map: str, protocol: str) -> str:
    entries = [
        e for e in protocol_map.split(",") if e and not e.startswith(CONTROLLER_LISTENER + ":")
    ]
    return ",".join([*entries, f"{CONTROLLER_LISTENER}:{protocol}"])


def _check(view: ClusterView) -> None:
    if not view.brokers:
        raise ConflictError(f"cluster '{view.name}' answered with no broker")
    for b in view.brokers:
        _check_broker(view, b)
    unregistered = sorted({b.broker_id for b in view.brokers} - set(view.registered))
    if unregistered:
        raise ConflictError(
            f"cluster '{view.name}': broker(s) {', '.join(map(str, unregistered))} not "
            "registered in ZooKeeper; start them before planning"
        )
    if not view.cluster_id:
        raise ConflictError(f"cluster '{view.name}' has no /cluster/id in ZooKeeper")


def _check_broker(view: ClusterView, b: BrokerView) -> None:
    if b.process_roles or not b.zookeeper_connect:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} does not run in ZooKeeper mode "
            f"(process.roles={b.process_roles or 'unset'}); nothing to migrate"
        )
    if b.migration_enabled:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} already has {MIGRATION_FLAG}=true "
            "(a migration is under way); see `kmigrate kraft status` or revert it first"
        )
    ibp = parse_ibp(b.ibp)
    if ibp is None or ibp < LOWEST_IBP:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} has inter.broker.protocol.version="
            f"{b.ibp or 'unknown'}; the migration needs every broker on Kafka 3.9.x with "
            "inter.broker.protocol.version=3.9 (upgrade and roll the brokers first)"
        )
    if b.inter_broker_listener != view.brokers[0].inter_broker_listener:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} uses inter.broker.listener.name="
            f"{b.inter_broker_listener}, broker {view.brokers[0].broker_id} "
            f"{view.brokers[0].inter_broker_listener}: make them equal first"
        )
    protocol = _protocol_of(b)
    if protocol not in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"):
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id}'s inter-broker listener "
            f"{b.inter_broker_listener} is {protocol}, which is no security protocol "
            "Kafka knows; name PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL in "
            "listener.security.protocol.map"
        )
    if protocol.startswith("SASL_") and b.inter_broker_mechanism not in SASL_MECHANISMS:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} authenticates inter-broker traffic "
            f"with {b.inter_broker_mechanism or 'GSSAPI'}; kmigrate migrates "
            f"{', '.join(SASL_MECHANISMS)} only so far"
        )
    if b.inter_broker_mechanism != view.brokers[0].inter_broker_mechanism:
        raise ConflictError(
            f"cluster '{view.name}': brokers {view.brokers[0].broker_id} and {b.broker_id} "
            "use different sasl.mechanism.inter.broker.protocol; make them equal first"
        )
    if b.authorizer and b.authorizer != ZK_AUTHORIZER:
        raise ConflictError(
            f"cluster '{view.name}': broker {b.broker_id} uses authorizer.class.name="
            f"{b.authorizer}; only Kafka's AclAuthorizer (or none) is migrated"
        )


def _protocol_of(b: BrokerView) -> str:
    listener = b.inter_broker_listener or "PLAINTEXT"
    for entry in (b.protocol_map or "").split(","):
        name, _, protocol = entry.partition(":")
        if name == listener:
            return protocol
    return listener


def parse_plan(text: str, where: str) -> KRaftPlan:
    wrong = "not a KRaft migration plan (write one with `kmigrate kraft plan`)"
    raw = yaml_mapping(text, where, wrong)
    if raw.get("kind") != PLAN_KIND:
        raise ConfigError(f"{where}: {wrong}")
    return validated(KRaftPlan, raw, where)


def load_plan(path: Path) -> KRaftPlan:
    return parse_plan(read_user_file(path, "plan"), str(path))
