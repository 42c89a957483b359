"""ACL bindings: listing, creating (reporting every failure) and deleting."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin.connection import AdminConnection, enum_name
from kmigrate.model.cluster import AclEntry

T = TypeVar("T")


def settled(changed: Collection[AclEntry], listed: Iterable[AclEntry], present: bool) -> bool:
    """Whether the listing shows every changed binding (``present``) or none of them."""
    found = set(listed)
    return all((entry in found) == present for entry in changed)


def match_all() -> AclBindingFilter:
    """The filter every ACL binding matches."""
    return AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


class Acls:
    """The cluster's ACL bindings, as :class:`AclEntry` values."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def list_acls(self) -> list[AclEntry]:
        """Every ACL binding on the cluster."""
        bindings = self._conn.wait(
            self._conn.client.describe_acls(match_all(), request_timeout=self._conn.timeout),
            "list ACLs",
        )
        return sorted(_acl_entry(b) for b in bindings)

    def create_acls(self, entries: Iterable[AclEntry]) -> None:
        """Create ACL bindings; reports every binding that failed, not only the first.
        Returns once listing shows them all, or after the cluster's timeout: a KRaft
        controller answers when it has committed the bindings, and the broker asked
        lists what it has applied since, a moment later."""
        wanted = list(entries)
        bindings = [_acl(AclBinding, e) for e in wanted]
        if not bindings:
            return
        futures = self._conn.client.create_acls(bindings, request_timeout=self._conn.timeout)
        errors = _collect(futures, lambda f: self._conn.wait(f, "create ACLs"))
        if errors:
            raise errors[0].__class__(
                "; ".join(str(e) for e in errors) if len(errors) > 1 else str(errors[0])
            )
        self._until_listed(wanted, present=True)

    def delete_acls(self, entries: Iterable[AclEntry]) -> int:
        """Delete the exact ACL bindings given; returns how many were deleted, once
        listing no longer shows them (or after the cluster's timeout)."""
        unwanted = list(entries)
        filters = [_acl(AclBindingFilter, e) for e in unwanted]
        if not filters:
            return 0
        futures = self._conn.client.delete_acls(filters, request_timeout=self._conn.timeout)
        deleted = sum(len(r) for r in self._conn.wait_all(futures, "delete ACLs").values())
        self._until_listed(unwanted, present=False)
        return deleted

    def _until_listed(self, changed: list[AclEntry], present: bool) -> None:
        self._conn.until_shown(lambda: settled(changed, self.list_acls(), present))


def _collect(
    futures: Mapping[Any, Future[Any]], wait: Callable[[Future[Any]], Any]
) -> list[KMigrateError]:
    errors = []
    for future in futures.values():
        try:
            wait(future)
        except KMigrateError as exc:
            errors.append(exc)
    return errors


def _acl_entry(b: AclBinding) -> AclEntry:
    return AclEntry(
        enum_name(b.restype),
        b.name,
        enum_name(b.resource_pattern_type),
        b.principal,
        b.host,
        enum_name(b.operation),
        enum_name(b.permission_type),
    )


def _acl(kind: Callable[..., T], e: AclEntry) -> T:
    """An AclBinding or AclBindingFilter (same constructor) for one entry."""
    return kind(
        ResourceType[e.resource_type],
        e.resource_name,
        ResourcePatternType[e.pattern_type],
        e.principal,
        e.host,
        AclOperation[e.operation],
        AclPermissionType[e.permission],
    )
