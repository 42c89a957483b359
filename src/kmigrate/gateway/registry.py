# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.gateway.control.registry."""

from kmigrate.gateway.control.registry import Registry, configured

__all__ = ["Registry", "configured"]
