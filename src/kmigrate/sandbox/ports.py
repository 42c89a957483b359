# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to :mod:`kmigrate.net`."""

from kmigrate.net import free_ports

__all__ = ["free_ports"]
