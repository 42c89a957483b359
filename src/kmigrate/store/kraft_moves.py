"""Migrations of a cluster to KRaft: kept in the same tables as ZooKeeper ensemble moves
(a plan, the phase reached, every step's outcome), under the key ``kraft:<cluster>`` so
the two kinds of move of one cluster never meet."""

from __future__ import annotations

from kmigrate.store import zk_moves
from kmigrate.store.database import Store
from kmigrate.store.zk_moves import MoveEvent, MoveRecord

__all__ = [
    "MoveEvent",
    "MoveRecord",
    "begin",
    "get",
    "history",
    "interrupted",
    "record",
    "set_phase",
]


def key(cluster: str) -> str:
    return f"kraft:{cluster}"


def begin(store: Store, cluster: str, plan_yaml: str) -> MoveRecord:
    return zk_moves.begin_move(store, key(cluster), plan_yaml, "migration to KRaft", cluster)


def get(store: Store, cluster: str) -> MoveRecord | None:
    return zk_moves.get_move(store, key(cluster))


def set_phase(store: Store, cluster: str, phase: str) -> None:
    zk_moves.set_phase(store, key(cluster), phase)


def record(
    store: Store, cluster: str, phase: str, step: str, outcome: str, detail: str | None = None
) -> None:
    zk_moves.record(store, key(cluster), phase, step, outcome, detail)


def history(store: Store, cluster: str) -> list[MoveEvent]:
    return zk_moves.history(store, key(cluster))


def interrupted(store: Store, cluster: str, broker: int) -> bool:
    """Whether a restart of ``broker`` began and never ended (a migration killed in it)."""
    return zk_moves.restart_interrupted(store, key(cluster), broker)
