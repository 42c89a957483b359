"""ZooKeeper's four-letter words: what one server says of itself (its mode, version, the
last transaction it applied), asked over a plain socket, no session."""

from __future__ import annotations

import socket


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


def last_zxid(address: str) -> str | None:
    """The last transaction id the server applied (`srvr`'s Zxid), None if it does not
    answer."""
    return _field(four_letter(address, "srvr"), "Zxid")


def _field(text: str | None, name: str) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    return None
