"""Who stops and starts ZooKeeper servers and Kafka brokers during a move.

The move itself only decides what must happen; an operator does it: the sandbox for
its own processes (kmigrate.sandbox.zk_operator), the operator's command templates on
real hosts (kmigrate.ensemble_move.commands).
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

    def recover_broker(self, broker_id: int, zookeeper_connect: str, *, registered: bool) -> bool:
        """A move was killed while restarting this broker: make sure it runs again
        (restarted with ``zookeeper_connect`` if it is down); True if it had to."""
