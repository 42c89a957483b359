# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to :mod:`kmigrate.model.migrations`."""

from kmigrate.model.migrations import Item

__all__ = ["Item"]
