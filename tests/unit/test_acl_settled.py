"""Creating or deleting ACLs returns once the broker lists the change (KRaft applies a
committed change a moment after the controller answers)."""

from __future__ import annotations

from kmigrate.kafka.admin.acls import settled
from kmigrate.model.cluster import AclEntry

WRITE = AclEntry("TOPIC", "orders", "LITERAL", "User:app", "*", "WRITE", "ALLOW")
READ = AclEntry("TOPIC", "orders", "LITERAL", "User:app", "*", "READ", "ALLOW")
OTHER = AclEntry("GROUP", "billing", "LITERAL", "User:app", "*", "READ", "ALLOW")


def test_created_bindings_are_settled_only_when_all_are_listed() -> None:
    assert not settled([WRITE, READ], [OTHER], present=True)
    assert not settled([WRITE, READ], [WRITE, OTHER], present=True)
    assert settled([WRITE, READ], [OTHER, READ, WRITE], present=True)


def test_deleted_bindings_are_settled_only_when_none_is_listed() -> None:
    assert not settled([WRITE, READ], [READ], present=False)
    assert settled([WRITE, READ], [OTHER], present=False)
    assert settled([], [OTHER], present=False)
