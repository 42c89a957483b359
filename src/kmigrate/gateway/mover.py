# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.gateway.control.mover."""

from kmigrate.gateway.control.mover import Moved, smooth

__all__ = ["Moved", "smooth"]
