"""Reading znodes through a session: an absent znode reads as None, absent children as
none, so callers need not know kazoo's NoNodeError."""

from __future__ import annotations

import json
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kmigrate.errors import ConfigError


def data(zk: KazooClient, path: str) -> bytes | None:
    """The znode's data (b"" when empty), None when it does not exist."""
    try:
        raw, _ = zk.get(path)
    except NoNodeError:
        return None
    return raw or b""


def children(zk: KazooClient, path: str) -> list[str]:
    """The znode's children, none when it does not exist."""
    try:
        return list(zk.get_children(path))
    except NoNodeError:
        return []


def read_json(zk: KazooClient, path: str) -> dict[str, Any] | None:
    """The znode's JSON object; None when it does not exist or holds no object;
    ConfigError when it does not hold JSON."""
    raw = data(zk, path)
    if raw is None:
        return None
    try:
        found = json.loads(raw.decode()) if raw else {}
    except ValueError:
        raise ConfigError(f"ZooKeeper node {path} does not hold JSON") from None
    return found if isinstance(found, dict) else None
