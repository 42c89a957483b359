# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.store.operations (kind ENSEMBLE_MOVE) and kmigrate.runbook."""

from kmigrate.model.operations import ENSEMBLE_MOVE, MoveEvent, MoveRecord
from kmigrate.store import operations
from kmigrate.store.database import Store

__all__ = ["begin_move", "get_move", "history", "record"]


def begin_move(store: Store, kafka: str, plan_yaml: str) -> MoveRecord:
    return operations.begin(store, ENSEMBLE_MOVE, kafka, plan_yaml, "ZooKeeper move")


def get_move(store: Store, kafka: str) -> MoveRecord | None:
    return operations.get(store, ENSEMBLE_MOVE, kafka)


def history(store: Store, kafka: str) -> list[MoveEvent]:
    return operations.history(store, ENSEMBLE_MOVE, kafka)


def record(store: Store, kafka: str, phase: str, step: str, outcome: str) -> None:
    operations.record(store, ENSEMBLE_MOVE, kafka, phase, step, outcome)
