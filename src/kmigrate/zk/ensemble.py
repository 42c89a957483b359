# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.zookeeper.ensemble (resolve_ensemble) and kmigrate.zk.world."""

from kmigrate.zookeeper.ensemble import resolve_ensemble

__all__ = ["resolve_ensemble"]
