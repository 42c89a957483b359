"""TCP ports on 127.0.0.1: free ones to listen on, and whether one is in use.

A bottom-floor helper: the sandbox and Spark's standalone cluster both pick ports.
"""

from __future__ import annotations

import random
import socket
from contextlib import ExitStack
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_LISTEN_PORT = 10000  # below it: ports services own by custom (9092, 2181, 8081...)


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free a moment ago (held together, then released).

    Taken below the kernel's ephemeral range: a port picked there (as binding port 0
    does) can be taken by any outgoing connection before the broker or server it was
    picked for binds it, which busy test runs saw ("Address already in use"). Where no
    such room exists, ports the kernel picks (port 0)."""
    low = _ephemeral_low()
    if low - LOWEST_LISTEN_PORT < 1000 + count:
        return _kernel_picked(count)
    rng = random.Random()
    with ExitStack() as stack:
        ports: list[int] = []
        for _ in range(50 * count + 100):
            if len(ports) == count:
                break
            port = rng.randrange(LOWEST_LISTEN_PORT, low)
            if port in ports:
                continue
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(port)
        return ports if len(ports) == count else _kernel_picked(count)


def _ephemeral_low() -> int:
    """The lowest port the kernel gives outgoing connections (Linux: 32768 by default)."""
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return LOWEST_LISTEN_PORT  # unknown: no room below it, the kernel picks


def _kernel_picked(count: int) -> list[int]:
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def is_listening(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
