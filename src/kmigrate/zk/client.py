"""The ZooKeeper access layer: kazoo sessions and four-letter words, errors translated
to kmigrate's once, here."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from kmigrate.errors import ClusterUnavailableError, ClusterUnreachableError

# kazoo logs every reconnect attempt at WARNING; kmigrate reports failures itself, once.
logging.getLogger("kazoo.client").setLevel(logging.ERROR)


def session_client(connect: str, name: str, timeout_s: float = 10.0) -> KazooClient:
    """A started, long-lived kazoo client (session timeout ``timeout_s``), or
    ClusterUnreachableError; the caller stops and closes it."""
    client = KazooClient(hosts=connect, timeout=timeout_s)
    try:
        client.start(timeout=timeout_s)
    except (KazooTimeoutError, KazooException, OSError) as exc:
        client.close()
        raise ClusterUnreachableError(
            f"cannot reach ZooKeeper ensemble '{name}' at {connect} within {timeout_s:g}s "
            f"({type(exc).__name__}); check its connect string and that it runs",
            cluster=name,
            condition="no ZooKeeper server reachable",
        ) from None
    return client


@contextmanager
def session(connect: str, name: str, timeout_s: float = 10.0) -> Iterator[KazooClient]:
    """A started kazoo client on ``connect`` (closed after), or ClusterUnreachableError."""
    client = session_client(connect, name, timeout_s)
    try:
        yield client
    except KazooException as exc:
        # ConnectionLoss while a server restarts or a reconfig moves the leader: transient.
        raise ClusterUnavailableError(
            f"ZooKeeper ensemble '{name}' dropped the connection ({type(exc).__name__})",
            cluster=name,
            condition=f"ZooKeeper {type(exc).__name__}",
        ) from None
    finally:
        client.stop()
        client.close()


def four_letter(address: str, command: str, timeout: float = 2.0) -> str | None:
    """A four-letter-word answer from the server at ``host:port``, None if it does not
    answer (down, or the word is not whitelisted)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as conn:
            conn.sendall(command.encode())
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
    except (OSError, ValueError):
        return None
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(address: str) -> str | None:
    """leader / follower / observer / standalone, or None when the server does not serve."""
    return _field(four_letter(address, "srvr"), "Mode")


def server_version(address: str) -> str | None:
    """e.g. "3.8.4" from `srvr`."""
    version = _field(four_letter(address, "srvr"), "Zookeeper version")
    return version.split("-", 1)[0].split(",", 1)[0] if version else None


def _field(text: str | None, name: str) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    return None
