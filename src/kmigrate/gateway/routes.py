# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.gateway.control.routes."""

from kmigrate.gateway.control.routes import RoutingTable

__all__ = ["RoutingTable"]
