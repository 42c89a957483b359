# TEMP merge shim (issue 29): re-exports for files another branch owns; removed at merge.
"""Moved to :mod:`kmigrate.model.cluster` and :mod:`kmigrate.model.records`."""

from kmigrate.model.cluster import AclEntry, TopicInfo, TopicPartitionOffset
from kmigrate.model.records import Record

__all__ = ["AclEntry", "Record", "TopicInfo", "TopicPartitionOffset"]
