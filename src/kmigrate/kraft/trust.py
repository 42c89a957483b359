"""Who the nodes of a migrating cluster are to each other (pure): the principal brokers
and controllers reach the controllers as, and the controllers' authorizer, deciding
exactly as the brokers' did.

KRaft's StandardAuthorizer answers only super users until it has loaded the metadata,
and a quorum of several controllers elects its leader before that; the brokers must be
let in before the ACLs are migrated too. So whoever reaches the controllers must be a
super user of theirs, or (one controller) allowed where no ACL names a resource. The
shapes:

* SASL between brokers: the nodes authenticate to each other as kmigrate's user for the
  cluster (kraft.sasl), which must be a super user of the brokers already;
* SSL between brokers: the controller listener asks for client certificates and every
  node presents the brokers' certificate, whose principal the controllers make a super
  user (only holders of the brokers' private key present it);
* no authorizer: nothing to decide, the controller listener is PLAINTEXT;
* PLAINTEXT between brokers with an authorizer: the brokers would reach the controllers
  as User:ANONYMOUS. Where that is enough (one controller, everyone allowed where no ACL
  names a resource, or ANONYMOUS a super user already) it is kept; otherwise the
  controller listener gets a principal of kmigrate's own, :data:`CONTROLLER_USER` over
  SASL PLAIN, made a super user of the controllers alone. No client-facing listener
  gains a mechanism or a user, and the brokers' super users stay as they are.

kmigrate never widens what a client may do: ANONYMOUS is never made a super user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.errors import ConfigError, ConflictError

ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
KRAFT_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
ALLOW_EVERYONE = "allow.everyone.if.no.acl.found"
SUPER_USERS = "super.users"
# What decides who may do what, besides the ACLs: the controllers get the brokers' values.
# Kafka hides the first two from DescribeConfigs (not broker configs it knows: "sensitive").
AUTHORIZER_SETTINGS = (ALLOW_EVERYONE, SUPER_USERS, "principal.builder.class")
HIDDEN_SETTINGS = (ALLOW_EVERYONE, SUPER_USERS)
DEFAULT_PRINCIPAL_BUILDER = (
    "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
)
# The controller listener's own principal, where the cluster's listeners give none.
CONTROLLER_USER = "kmigrate-controller"


@dataclass(frozen=True)
class BrokerRules:
    """One broker's authorizer, as it answered (the part :mod:`kraft.plan` reads)."""

    broker_id: int
    authorizer: str | None
    shown: Mapping[str, str]  # the authorizer settings Kafka shows
    hidden: tuple[str, ...]  # those it only says are set


@dataclass(frozen=True)
class Trust:
    """How brokers and controllers reach the controllers, and what the controllers'
    authorizer is given."""

    principal: str  # e.g. User:ANONYMOUS, User:admin, User:kmigrate-controller
    controller_user: str | None  # set: kmigrate's own principal on the controller listener
    authorizer: dict[str, str]  # the controllers' authorizer settings ({}: none)
    certificate: bool = False  # the principal is the brokers' certificate's (SSL)
    tls: bool = False  # the brokers talk SASL_SSL: so does the controller listener

    @property
    def shape(self) -> str:
        """One line: who reaches the controllers, and how."""
        if self.certificate:
            return (
                "the controller listener is SSL with client certificates; brokers and "
                f"controllers present the brokers' certificate, {self.principal}"
                + (", a super user of the controllers" if self._super else "")
            )
        if self.controller_user:
            return (
                f"the controller listener is SASL_PLAINTEXT; brokers and controllers log in to it "
                f"as {self.principal} (PLAIN), a super user of the controllers only, with a "
                "secret kmigrate generated"
            )
        if self.principal == ANONYMOUS:
            return "the controller listener is PLAINTEXT; brokers reach it as User:ANONYMOUS"
        protocol = "SASL_SSL" if self.tls else "SASL_PLAINTEXT"
        return f"the controller listener is {protocol}; the nodes log in as {self.principal}"

    @property
    def _super(self) -> bool:
        return self.principal in _supers(self.authorizer)


def controller_trust(
    cluster: str,
    brokers: list[BrokerRules],
    hidden_values: Mapping[str, str],
    sasl_user: str | None,
    voters: int,
    certificate_principal: str | None = None,
) -> Trust:
    """Who reaches the controllers: ``sasl_user`` where the brokers talk SASL, the
    brokers' ``certificate_principal`` where they talk SSL, else ANONYMOUS, else
    kmigrate's own controller principal (see the module's docstring); refused, naming
    what to fix, where no shape keeps who may do what."""
    if certificate_principal:
        return _by_certificate(cluster, brokers, hidden_values, certificate_principal, voters)
    principal = f"User:{sasl_user}" if sasl_user else ANONYMOUS
    if not brokers[0].authorizer:
        return Trust(principal, None, {})
    settings = _equal_settings(cluster, brokers, dict(hidden_values))
    if sasl_user is None and not _accepted(settings, ANONYMOUS, voters):
        own = f"User:{CONTROLLER_USER}"
        supers = ";".join([*_supers(settings), own])
        settings |= {SUPER_USERS: supers}
        return Trust(own, CONTROLLER_USER, {"authorizer.class.name": KRAFT_AUTHORIZER, **settings})
    _reachable(cluster, settings, principal)
    _quorum_can_elect(cluster, settings, principal, voters)
    return Trust(principal, None, {"authorizer.class.name": KRAFT_AUTHORIZER, **settings})


def _by_certificate(
    cluster: str,
    brokers: list[BrokerRules],
    hidden_values: Mapping[str, str],
    principal: str,
    voters: int,
) -> Trust:
    """SSL between brokers: the controller listener asks for client certificates, and
    brokers and controllers present the cluster's own (the brokers' key store). Its
    principal is made a super user of the controllers where the brokers' rules do not
    already accept it: only holders of the brokers' private key present it."""
    if not brokers[0].authorizer:
        return Trust(principal, None, {}, certificate=True)
    settings = _equal_settings(cluster, brokers, dict(hidden_values))
    if not _accepted(settings, principal, voters):
        settings |= {SUPER_USERS: ";".join([*_supers(settings), principal])}
    authorizer = {"authorizer.class.name": KRAFT_AUTHORIZER, **settings}
    return Trust(principal, None, authorizer, certificate=True)


def _equal_settings(
    cluster: str, brokers: list[BrokerRules], hidden_values: dict[str, str]
) -> dict[str, str]:
    """The brokers' authorizer settings, the same on every broker (or refused)."""
    sample = brokers[0]
    unknown = sorted(set(hidden_values) - set(sample.hidden))
    if unknown:
        raise ConfigError(
            f"--authorizer-setting {unknown[0]}: broker {sample.broker_id} does not set it (the "
            "controllers must decide exactly as the brokers do); leave it out"
        )
    settings = _settings(sample, hidden_values)
    for b in brokers[1:]:
        if (b.authorizer, _settings(b, hidden_values)) != (sample.authorizer, settings):
            raise ConflictError(
                f"cluster '{cluster}': brokers {sample.broker_id} and {b.broker_id} "
                "authorize differently (authorizer.class.name, allow.everyone.if.no.acl.found, "
                "super.users or principal.builder.class differ); make them equal first"
            )
    return settings


def _settings(b: BrokerRules, hidden_values: dict[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key in AUTHORIZER_SETTINGS:
        if key in b.hidden:
            if key not in hidden_values:
                raise ConfigError(
                    f"broker {b.broker_id} sets {key}, whose value Kafka does not show; pass "
                    f"--authorizer-setting {key}=VALUE as in the brokers' server.properties"
                )
            found[key] = hidden_values[key]
        elif key in b.shown and b.shown[key] != DEFAULT_PRINCIPAL_BUILDER:
            found[key] = b.shown[key]
    return found


def _supers(settings: Mapping[str, str]) -> list[str]:
    return [u.strip() for u in settings.get(SUPER_USERS, "").split(";") if u.strip()]


def _everyone(settings: Mapping[str, str]) -> bool:
    return settings.get(ALLOW_EVERYONE, "false").lower() == "true"


def _accepted(settings: Mapping[str, str], principal: str, voters: int) -> bool:
    """Whether ``principal`` can both elect a quorum of ``voters`` and be let in as a
    broker before any ACL is on the controllers."""
    if principal in _supers(settings):
        return True
    return voters == 1 and _everyone(settings)


def _reachable(cluster: str, settings: dict[str, str], principal: str) -> None:
    """The controllers must accept the brokers (``principal``) before they hold any
    ACL: as a super user of the brokers' own, or by allow.everyone.if.no.acl.found."""
    if principal in _supers(settings) or _everyone(settings):
        return
    raise ConflictError(
        f"cluster '{cluster}': its brokers reach the KRaft controllers as {principal} "
        f"(SASL), which is neither a super user nor allowed by {ALLOW_EVERYONE}; the "
        "controllers would have to make it a super user until the ACLs are migrated, "
        "letting its requests (and admin requests the brokers forward) skip every ACL. "
        "kmigrate never widens access: give kmigrate a super user of the brokers in "
        "clusters.yaml"
    )


def _quorum_can_elect(cluster: str, settings: dict[str, str], principal: str, voters: int) -> None:
    """Several controllers elect a leader (Vote, Fetch) before any of them has loaded
    the metadata, and KRaft's StandardAuthorizer refuses every principal but its super
    users until it has (AuthorizerNotReadyException): the quorum would never elect.
    One controller elects itself without asking anyone."""
    if voters == 1 or principal in _supers(settings):
        return
    raise ConflictError(
        f"cluster '{cluster}': {voters} controllers with KRaft's StandardAuthorizer elect "
        f"their leader only if they reach each other as a super user, and they would reach "
        f"each other as {principal} (SASL), which is not in super.users (until it has "
        "loaded the metadata, the authorizer answers only super users; the quorum would "
        "never elect). kmigrate never widens access: give kmigrate a super user of the "
        "brokers in clusters.yaml"
    )
