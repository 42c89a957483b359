"""Who a client is: the listener's TLS and SASL set-up (clusters.yaml ``gateway: clients:``)
and, per connection, the SaslHandshake (17) and SaslAuthenticate (36) exchange.

As a Kafka broker does: before authentication a client may send ApiVersions and the SASL
requests only; any other request closes the connection. A failed authentication is
answered with SASL_AUTHENTICATION_FAILED and a message that holds no secret, then the
connection closes. Re-authentication (KIP-368) is not offered: sessions do not expire.
With TLS and a required client certificate and no SASL, the certificate's subject is
the principal; with SASL, the SASL identity is.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.config import ClientSaslConfig, ClientsConfig, ClusterConfig, GatewayConfig
from kmigrate.errors import ConfigError
from kmigrate.gateway.control.principals import PrincipalMap, principal_map
from kmigrate.gateway.protocol import jwt, sasl_server, tls
from kmigrate.gateway.protocol.entities import build, response_class_of
from kmigrate.kafka.protocol.wire import Request

log = logging.getLogger("kmigrate.gateway.authentication")

SASL_APIS = {17, 36}
OPEN_APIS = {18, *SASL_APIS}  # allowed before authentication
SASL_VERSIONS = {17: (1, 1), 36: (0, 2)}  # v0 handshake (raw tokens) is not offered


@dataclass(frozen=True)
class Sasl:
    mechanisms: tuple[str, ...]
    users: sasl_server.Users
    tokens: jwt.TokenValidator | None


@dataclass(frozen=True)
class Access:
    """How clients of this instance authenticate, and who they act as on backends."""

    ssl: ssl.SSLContext | None = None
    sasl: Sasl | None = None
    certificates_required: bool = False
    principals: PrincipalMap = field(default_factory=PrincipalMap)

    @property
    def authenticates(self) -> bool:
        return self.sasl is not None or self.certificates_required


def access_of(
    config: GatewayConfig | None, clusters: dict[str, ClusterConfig], base: Path
) -> Access:
    """The access rules of ``config`` (files relative to ``base``, clusters.yaml's folder);
    every mistake is one ConfigError line."""
    clients = config.clients if config else ClientsConfig()
    principals = principal_map(config, clusters)
    if principals and not clients.authenticated:
        raise ConfigError(
            "gateway principals: a principal map needs client authentication "
            "('gateway: clients: sasl:' or a required client certificate)"
        )
    context = None
    if clients.tls is not None:
        t = clients.tls
        context = tls.server_context(
            str(base / t.cert_file),
            str(base / t.key_file),
            t.key_password.get_secret_value() if t.key_password else None,
            str(base / t.ca_file) if t.ca_file else None,
            t.verify,
        )
    required = clients.tls is not None and clients.tls.verify == "required"
    sasl = _sasl(clients.sasl, base) if clients.sasl else None
    return Access(context, sasl, required, principals)


def _sasl(config: ClientSaslConfig, base: Path) -> Sasl:
    mechanisms = tuple(dict.fromkeys(config.mechanisms))
    if not mechanisms:
        raise ConfigError("gateway clients sasl: name at least one mechanism")
    passwords = {u: p.get_secret_value() for u, p in config.users.items()}
    if set(mechanisms) - {"OAUTHBEARER"} and not passwords:
        raise ConfigError("gateway clients sasl: PLAIN and SCRAM need users (passwords from env)")
    if any(not p for p in passwords.values()):
        raise ConfigError("gateway clients sasl: a user has an empty password")
    tokens = None
    if "OAUTHBEARER" in mechanisms:
        if config.oauthbearer is None:
            raise ConfigError("gateway clients sasl: OAUTHBEARER needs an 'oauthbearer:' section")
        tokens = _validator(config, base)
    users = sasl_server.Users(passwords, config.scram_iterations)
    return Sasl(mechanisms, users, tokens)


def _validator(config: ClientSaslConfig, base: Path) -> jwt.TokenValidator:
    o = config.oauthbearer
    assert o is not None
    keys: list[jwt.RsaKey] = []
    if o.jwks_file:
        path = base / o.jwks_file
        try:
            keys = jwt.load_jwks(path.read_text())
        except OSError as exc:
            raise ConfigError(f"gateway oauthbearer: cannot read {path}: {exc.strerror}") from None
        except jwt.TokenError as exc:
            raise ConfigError(f"gateway oauthbearer: {path}: {exc}") from None
    hmac_key = o.hmac_key.get_secret_value().encode() if o.hmac_key else None
    if not keys and hmac_key is None and not o.allow_unsecured:
        raise ConfigError(
            "gateway oauthbearer: give hmac_key or jwks_file (allow_unsecured is for tests)"
        )
    return jwt.TokenValidator(
        hmac_key, tuple(keys), o.allow_unsecured, o.issuer, o.audience, o.principal_claim
    )


class Authenticator:
    """One client connection's authentication."""

    def __init__(self, access: Access, peer: str, certificate: dict[str, Any] | None) -> None:
        self.access = access
        self.peer = peer
        self.principal = tls.principal_of(certificate)
        self.authenticated = access.sasl is None
        self.failed = False
        self._exchange: sasl_server.Exchange | None = None
        self._mechanism = ""

    def refusal(self) -> str | None:
        """Why a connection authenticated by its certificate may not act (None: it may)."""
        principal, principals = self.principal, self.access.principals
        if self.access.sasl is None and principal is not None and not principals.admits(principal):
            return f"principal {principal} is not mapped to backend credentials"
        return None

    def allows(self, api_key: int) -> bool:
        """Whether the connection may send ``api_key`` now."""
        return self.authenticated or api_key in OPEN_APIS

    async def answer(self, request: Request) -> Any:
        """The answer to a SaslHandshake or SaslAuthenticate request."""
        if request.api_key == 17:
            return self._handshake(request.body)
        try:
            reply = await self._authenticate(request.body.auth_bytes)
        except sasl_server.SaslFailure as exc:
            self.failed = True
            log.info(  # as Kafka's brokers: every failed attempt, at INFO
                "client %s: SASL %s authentication failed: %s", self.peer, self._mechanism, exc
            )
            return self._reply(request.body, ErrorCode.sasl_authentication_failed, str(exc))
        return self._reply(request.body, ErrorCode.none, None, reply)

    def _handshake(self, body: Any) -> Any:
        sasl = self.access.sasl
        offered = sasl.mechanisms if sasl else ()
        code = ErrorCode.none
        if self._exchange is not None or self.authenticated:
            code = ErrorCode.illegal_sasl_state
        elif body.mechanism not in offered:
            code = ErrorCode.unsupported_sasl_mechanism
        else:
            self._mechanism = body.mechanism
            self._exchange = self._new_exchange(body.mechanism)
        if code != ErrorCode.none:
            self.failed = True
        return build(response_class_of(body), error_code=code, mechanisms=offered)

    def _new_exchange(self, mechanism: str) -> sasl_server.Exchange:
        sasl = self.access.sasl
        assert sasl is not None
        if mechanism == "PLAIN":
            return sasl_server.PlainExchange(sasl.users)
        if mechanism == "OAUTHBEARER":
            assert sasl.tokens is not None
            return sasl_server.OAuthBearerExchange(_checker(sasl.tokens))
        return sasl_server.ScramExchange(mechanism, sasl.users)

    async def _authenticate(self, message: bytes) -> bytes:
        exchange = self._exchange
        if exchange is None or self.authenticated:
            raise sasl_server.SaslFailure("SaslAuthenticate without a SaslHandshake first")
        # PBKDF2 (PLAIN) takes milliseconds: off the event loop.
        reply = await asyncio.to_thread(exchange.step, message)
        if exchange.principal is not None:
            if not self.access.principals.admits(exchange.principal):
                raise sasl_server.SaslFailure(
                    f"Authentication failed: principal {exchange.principal} is not mapped to "
                    "backend credentials on this gateway"
                )
            self.principal, self.authenticated = exchange.principal, True
            log.debug("client %s authenticated as %s", self.peer, self.principal)
        return reply

    @staticmethod
    def _reply(body: Any, code: ErrorCode, message: str | None, auth: bytes = b"") -> Any:
        reply = response_class_of(body)
        return build(reply, error_code=code, error_message=message, auth_bytes=auth)


def _checker(tokens: jwt.TokenValidator) -> Callable[[str], str]:
    def check(token: str) -> str:
        try:
            return tokens.principal(token)
        except jwt.TokenError as exc:
            raise sasl_server.SaslFailure(f"invalid_token: {exc}") from None

    return check
