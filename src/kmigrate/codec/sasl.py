"""The client side of SASL PLAIN and SCRAM-SHA-256/512 (RFC 5802, as Kafka runs it), for
the gateway's connections to backends. Pure: messages in, messages out."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from kmigrate.errors import AuthenticationError

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *_HASHES)


@dataclass
class SaslClient:
    mechanism: str
    username: str
    password: str = field(repr=False)
    _nonce: str = field(default_factory=lambda: secrets.token_urlsafe(18), repr=False)
    _first_bare: str = ""
    _server_signature: bytes = b""

    def first(self) -> bytes:
        if self.mechanism == "PLAIN":
            return f"\0{self.username}\0{self.password}".encode()
        self._first_bare = f"n={_escape(self.username)},r={self._nonce}"
        return f"n,,{self._first_bare}".encode()

    def answer(self, challenge: bytes) -> bytes:
        """SCRAM's client-final message for the server's first message."""
        server_first = challenge.decode()
        parts = dict(item.split("=", 1) for item in server_first.split(","))
        nonce, salt, rounds = parts["r"], base64.b64decode(parts["s"]), int(parts["i"])
        if not nonce.startswith(self._nonce):
            raise AuthenticationError("the broker answered SCRAM with a nonce not based on ours")
        name = _HASHES[self.mechanism]
        salted = hashlib.pbkdf2_hmac(name, self.password.encode(), salt, rounds)
        client_key = hmac.new(salted, b"Client Key", name).digest()
        stored_key = hashlib.new(name, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", name).digest()
        self._server_signature = hmac.new(server_key, auth_message, name).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_final(self, message: bytes) -> None:
        parts = dict(item.split("=", 1) for item in message.decode().split(","))
        if "e" in parts:
            raise AuthenticationError(f"SCRAM authentication failed: {parts['e']}")
        if base64.b64decode(parts.get("v", "")) != self._server_signature:
            raise AuthenticationError("the broker's SCRAM signature does not match")


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")
