"""Who stops and starts ZooKeeper servers and Kafka brokers during a move.

The move itself only decides what must happen; an operator does it: the sandbox for
its own processes (kmigrate.sandbox.zk_operator), later a command template per host for
real clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Operator(Protocol):
    def stop_server(self, node_id: int) -> None:
        """Stop ZooKeeper server ``node_id`` (nothing if it does not run)."""

    def start_server(self, node_id: int, members: Sequence[int], *, fresh: bool) -> None:
        """(Re)start server ``node_id`` with a dynamic configuration listing ``members``
        (server ids of either ensemble) as participants; ``fresh`` empties its data
        first (its id stays)."""

    def restart_broker(self, broker_id: int, zookeeper_connect: str) -> None:
        """Restart one broker with ``zookeeper.connect`` set to ``zookeeper_connect``."""

    def start_broker_if_down(self, broker_id: int) -> bool:
        """Start the broker as it is configured if it does not run (a move killed in the
        middle of restarting it); True if it had to."""
