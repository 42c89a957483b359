# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to kmigrate.gateway.control.report."""

from kmigrate.gateway.control.report import migrations_json

__all__ = ["migrations_json"]
