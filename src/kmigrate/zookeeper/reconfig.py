"""An ensemble's dynamic configuration (`/zookeeper/config`), read and changed once.

A connection dropped during a reconfiguration may hide that it was applied (a reconfig
moves the leader), so before every attempt the caller's ``applied`` reads it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kmigrate.errors import ClusterUnavailableError, KafkaOperationError
from kmigrate.zookeeper.session import session

CONFIG = "/zookeeper/config"


def dynamic_config(connect: str, name: str) -> str:
    """The ensemble's configuration as its leader last committed it (read after a sync)."""
    with session(connect, name) as zk:
        zk.sync(CONFIG)
        raw, _ = zk.get(CONFIG)
    return str(raw.decode())


def reconfig(
    connect: str, name: str, applied: Callable[[], bool], again: str, **change: object
) -> None:
    """One reconfiguration (``joining``, ``leaving``, ``from_config``), applied once:
    nothing when ``applied()`` already holds; ``again`` is the command to resume with."""
    for _attempt in range(5):
        if applied():
            return
        try:
            with session(connect, name) as zk:
                zk.reconfig(
                    joining=change.get("joining"),
                    leaving=change.get("leaving"),
                    new_members=None,
                    from_config=change.get("from_config", -1),
                )
            return
        except ClusterUnavailableError:
            time.sleep(1.0)
    if not applied():
        raise KafkaOperationError(
            f"the reconfiguration of ZooKeeper ensemble '{name}' ({change}) did not take "
            f"effect; run {again} again"
        )
