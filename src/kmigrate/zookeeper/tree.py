"""Kafka's znode tree as one server sees it: every znode's path, data and ACL, counted
and digested, so two servers (a source and a target one) can be compared.

``digest`` and ``first_difference`` are pure; ``read_tree`` walks a server with kazoo
after a ``sync`` (a follower may lag its leader by a few transactions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kmigrate.errors import ConflictError
from kmigrate.zookeeper.session import session


@dataclass(frozen=True, order=True)
class Znode:
    path: str
    data: bytes
    acl: tuple[str, ...]  # "scheme:id:perms", sorted
    ephemeral: bool


@dataclass(frozen=True)
class TreeDigest:
    root: str
    znodes: int
    ephemeral: int
    digest: str  # BLAKE2b-128 hex over every znode, in path order


def digest(root: str, znodes: Iterable[Znode]) -> TreeDigest:
    """One digest for a tree: equal iff every path, data and ACL is equal."""
    h = hashlib.blake2b(digest_size=16)
    count = ephemeral = 0
    for node in sorted(znodes):
        count += 1
        ephemeral += node.ephemeral
        for part in (node.path.encode(), node.data, "\n".join(node.acl).encode()):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
    return TreeDigest(root, count, ephemeral, h.hexdigest())


def first_difference(a: Iterable[Znode], b: Iterable[Znode]) -> str | None:
    """The first path (in order) whose presence, data or ACL differs; None if equal."""
    left = {n.path: n for n in a}
    right = {n.path: n for n in b}
    for path in sorted(left.keys() | right.keys()):
        x, y = left.get(path), right.get(path)
        if x is None or y is None or (x.data, x.acl) != (y.data, y.acl):
            return path
    return None


def read_tree(address: str, root: str, name: str, timeout_s: float = 10.0) -> list[Znode]:
    """Every znode under ``root`` (included) as the server at ``address`` has it."""
    with session(address, name, timeout_s) as zk:
        zk.sync(root or "/")
        try:
            return list(_walk(zk, root or "/"))
        except NoNodeError:
            raise ConflictError(f"{root} does not exist on ZooKeeper server {address}") from None


def _walk(zk: KazooClient, path: str) -> Iterator[Znode]:
    data, stat = zk.get(path)
    acls, _ = zk.get_acls(path)
    yield Znode(
        path,
        data or b"",
        tuple(sorted(f"{a.id.scheme}:{a.id.id}:{a.perms}" for a in acls)),
        bool(stat.ephemeralOwner),
    )
    for child in sorted(zk.get_children(path)):
        if path == "/" and child == "zookeeper":
            continue  # ZooKeeper's own (quotas, config): differs by design
        yield from _walk(zk, f"{path.rstrip('/')}/{child}")
