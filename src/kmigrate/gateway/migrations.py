# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.gateway.control.partition_moves."""

from kmigrate.gateway.control.partition_moves import Migration, Mode, Status

__all__ = ["Migration", "Mode", "Status"]
