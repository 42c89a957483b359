# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.store.operations (kind KRAFT_CONVERSION) and kmigrate.runbook."""

from kmigrate.model.operations import KRAFT_CONVERSION, MoveEvent, MoveRecord
from kmigrate.store import operations
from kmigrate.store.database import Store

__all__ = ["get", "history"]


def get(store: Store, cluster: str) -> MoveRecord | None:
    return operations.get(store, KRAFT_CONVERSION, cluster)


def history(store: Store, cluster: str) -> list[MoveEvent]:
    return operations.history(store, KRAFT_CONVERSION, cluster)
