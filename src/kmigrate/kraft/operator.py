"""Who starts KRaft controllers and restarts brokers during a migration to KRaft: the
sandbox for its own processes (kmigrate.sandbox.kraft_operator), the operator's command
templates on real hosts (kmigrate.kraft.commands). The migration decides what must
happen and observes that it did; an operator only does it."""

from __future__ import annotations

from typing import Protocol

from kmigrate.kraft.plan import ConfigChange


class KRaftOperator(Protocol):
    def start_controller(self, node_id: int, properties: dict[str, str], cluster_id: str) -> None:
        """Write the controller's configuration (``properties``), format its storage
        with ``cluster_id`` unless it is already, and (re)start it."""

    def stop_controller(self, node_id: int, *, wipe: bool) -> None:
        """Stop the controller (nothing if it does not run); ``wipe`` deletes its
        storage (the guide's "deprovision")."""

    def restart_broker(self, broker_id: int, change: ConfigChange, *, quick_stop: bool) -> None:
        """Apply ``change`` to the broker's configuration and restart it. ``quick_stop``:
        its controlled shutdown cannot finish (a broker in migration mode waits up to 5
        minutes for a KRaft controller that was deprovisioned): stop it after seconds."""
