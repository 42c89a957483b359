# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.zookeeper.session."""

from kmigrate.zookeeper.session import session_client

__all__ = ["session_client"]
