"""SCRAM credentials of a secure ZooKeeper-mode sandbox cluster, written to ZooKeeper
before its brokers start (the brokers log in to each other as the admin, so its
credential must exist first).

The znode is what Kafka's own ``ConfigCommand --zookeeper --alter --entity-type users
--add-config 'SCRAM-SHA-512=[password=...]'`` writes (checked against Kafka 3.9.1):
``/config/users/<name>`` holding ``{"version":1,"config":{"SCRAM-SHA-512":
"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096"}}`` (RFC 5802 keys).
Computed here, the password never reaches a command line or a file other than
secrets.env.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping

from kmigrate.sandbox.state import SCRAM_MECHANISM
from kmigrate.zookeeper.session import session

ITERATIONS = 4096  # Kafka's default, and its minimum for SCRAM-SHA-512
_HASH = "sha512"


def scram_credential(password: str, salt: bytes, iterations: int = ITERATIONS) -> str:
    """The credential as Kafka stores it (ScramCredentialUtils.credentialToString)."""
    salted = hashlib.pbkdf2_hmac(_HASH, password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", _HASH)
    stored_key = hashlib.new(_HASH, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", _HASH)

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return (
        f"salt={b64(salt)},stored_key={b64(stored_key)},"
        f"server_key={b64(server_key)},iterations={iterations}"
    )


def user_znode(password: str) -> bytes:
    """The data of /config/users/<name> for a user with this password (fresh salt)."""
    credential = scram_credential(password, secrets.token_bytes(32))
    document = {"version": 1, "config": {SCRAM_MECHANISM: credential}}
    return json.dumps(document, separators=(",", ":")).encode()


def write_users(zookeeper_connect: str, passwords: Mapping[str, str]) -> None:
    """Create (or replace) each user's SCRAM credential under the cluster's chroot
    (created if absent, as the broker itself would)."""
    hosts, slash, chroot = zookeeper_connect.partition("/")
    root = f"/{chroot}".rstrip("/") if slash else ""
    with session(hosts, hosts) as zk:
        for user, password in passwords.items():
            path = f"{root}/config/users/{user}"
            if zk.exists(path):
                zk.set(path, user_znode(password))
            else:
                zk.create(path, user_znode(password), makepath=True)
