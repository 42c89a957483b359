"""The server side of SASL as Kafka brokers run it, for the gateway's clients: PLAIN,
SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and OAUTHBEARER (RFC 7628, KIP-255). Pure:
messages in, messages out.

Users' passwords are never kept: at start-up each one becomes a salted SCRAM credential
per hash (random salt, ``iterations`` >= 4096), and PLAIN is checked against that
credential too. An unknown user gets a decoy salt and fails at the last step, like a
wrong password, so the exchange does not say which users exist. Failures raise
``SaslFailure`` whose message may be sent to the client: it never holds a secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *HASHES, "OAUTHBEARER")
MIN_ITERATIONS = 4096


class SaslFailure(Exception):
    """Authentication failed; the message is safe to send to the client."""


def invalid_credentials(mechanism: str) -> SaslFailure:
    return SaslFailure(
        "Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {mechanism}"
    )


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a password (RFC 5802 section 3)."""

    salt: bytes
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)

    @classmethod
    def derive(cls, hash_name: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
        client_key, server_key = _keys(hash_name, password, salt, iterations)
        return cls(salt, iterations, hashlib.new(hash_name, client_key).digest(), server_key)

    def matches(self, hash_name: str, password: str) -> bool:
        client_key, _ = _keys(hash_name, password, self.salt, self.iterations)
        return hmac.compare_digest(hashlib.new(hash_name, client_key).digest(), self.stored_key)


def _keys(hash_name: str, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    return (
        hmac.new(salted, b"Client Key", hash_name).digest(),
        hmac.new(salted, b"Server Key", hash_name).digest(),
    )


class Users:
    """The users clients authenticate as, each with a SCRAM credential per hash."""

    def __init__(
        self,
        passwords: Mapping[str, str],
        iterations: int = MIN_ITERATIONS,
        salt: Callable[[], bytes] = lambda: secrets.token_bytes(24),
    ) -> None:
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"SCRAM iterations must be at least {MIN_ITERATIONS}")
        self.iterations = iterations
        self._credentials = {
            (user, mechanism): ScramCredential.derive(name, password, salt(), iterations)
            for user, password in passwords.items()
            for mechanism, name in HASHES.items()
        }
        self._decoy_key = secrets.token_bytes(32)

    def __len__(self) -> int:
        return len({user for user, _ in self._credentials})

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def decoy(self, mechanism: str, user: str) -> ScramCredential:
        """A credential no password matches, the same for the same unknown user."""
        salt = hmac.new(self._decoy_key, f"{mechanism}:{user}".encode(), "sha256").digest()[:24]
        return ScramCredential(salt, self.iterations, secrets.token_bytes(64), b"")

    def check_plain(self, user: str, password: str) -> bool:
        credential = self.scram("SCRAM-SHA-512", user)
        if credential is None:
            return False
        return credential.matches(HASHES["SCRAM-SHA-512"], password)


class Exchange(Protocol):
    """One client's authentication: ``step`` takes the client's message and returns the
    server's; ``principal`` is set once the client is authenticated."""

    principal: str | None

    def step(self, message: bytes) -> bytes: ...


@dataclass
class PlainExchange:
    users: Users
    principal: str | None = None

    def step(self, message: bytes) -> bytes:
        parts = message.decode(errors="replace").split("\0")
        if len(parts) != 3 or not parts[1]:
            raise SaslFailure("Invalid SASL/PLAIN message: expected authzid NUL user NUL password")
        authzid, user, password = parts
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: an authorization id other than the user")
        if not self.users.check_plain(user, password):
            raise invalid_credentials("PLAIN")
        self.principal = f"User:{user}"
        return b""


@dataclass
class ScramExchange:
    """RFC 5802's server: client-first, server-first, client-final, server-final."""

    mechanism: str
    users: Users
    nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24)
    principal: str | None = None
    _user: str = ""
    _credential: ScramCredential | None = field(default=None, repr=False)
    _gs2: str = ""
    _first_bare: str = ""
    _server_first: str = ""
    _known: bool = False

    def step(self, message: bytes) -> bytes:
        if self._credential is None:
            return self._first(message.decode(errors="replace"))
        return self._final(message.decode(errors="replace"))

    def _first(self, text: str) -> bytes:
        gs2, _, bare = text.partition(",")
        authzid, _, self._first_bare = bare.partition(",")
        if gs2 not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise SaslFailure(f"Invalid {self.mechanism} client-first message")
        self._gs2 = f"{gs2},{authzid},"
        attributes = _attributes(self._first_bare)
        if "n" not in attributes or "r" not in attributes:
            raise SaslFailure(f"Invalid {self.mechanism} client-first message")
        if attributes.get("tokenauth", "false") != "false":
            raise SaslFailure("Delegation tokens are not supported by the kmigrate gateway")
        self._user = _unescape(attributes["n"])
        if authzid and _unescape(authzid[2:]) != self._user:
            raise SaslFailure("Authentication failed: an authorization id other than the user")
        credential = self.users.scram(self.mechanism, self._user)
        self._known = credential is not None
        self._credential = credential or self.users.decoy(self.mechanism, self._user)
        nonce = attributes["r"] + self.nonce()
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        without_proof, _, proof_text = text.rpartition(",p=")
        attributes = _attributes(without_proof)
        nonce = _attributes(self._server_first)["r"]
        binding = base64.b64encode(self._gs2.encode()).decode()
        if attributes.get("r") != nonce or attributes.get("c") != binding:
            raise SaslFailure(f"Invalid {self.mechanism} client-final message")
        name = HASHES[self.mechanism]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(self._credential.stored_key, auth_message, name).digest()
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise invalid_credentials(self.mechanism) from None
        if len(proof) != len(signature):
            raise invalid_credentials(self.mechanism)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(name, client_key).digest()
        if not (hmac.compare_digest(stored, self._credential.stored_key) and self._known):
            raise invalid_credentials(self.mechanism)
        server_signature = hmac.new(self._credential.server_key, auth_message, name).digest()
        self.principal = f"User:{self._user}"
        return b"v=" + base64.b64encode(server_signature)


@dataclass
class OAuthBearerExchange:
    """RFC 7628's client response: ``n,,^Aauth=Bearer <token>^A...^A^A``; the token is
    handed to ``validate``, which returns the principal's name or raises SaslFailure."""

    validate: Callable[[str], str]
    principal: str | None = None

    def step(self, message: bytes) -> bytes:
        text = message.decode(errors="replace")
        gs2, _, rest = text.partition("\x01")
        if not gs2.startswith(("n,", "y,")):
            raise SaslFailure("Invalid OAUTHBEARER message")
        pairs = dict(p.split("=", 1) for p in rest.split("\x01") if "=" in p)
        scheme, _, token = pairs.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise SaslFailure("Invalid OAUTHBEARER message: no bearer token")
        self.principal = f"User:{self.validate(token.strip())}"
        return b""


def _attributes(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")
